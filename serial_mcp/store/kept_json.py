"""A small JSON document kept in a cache directory under a key (mcp/tool_cache.py keeps the tools'
schemas this way): read back only when its key matches, written atomically, any failure a miss."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from serial_mcp.store.atomic import replace_atomic

log = logging.getLogger(__name__)


def load_kept(path: Path, key: str) -> dict[str, Any] | None:
    """The document's ``data`` if the file holds one kept under ``key``; None on any miss."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("fingerprint") != key or not isinstance(doc.get("data"), dict):
        return None
    data: dict[str, Any] = doc["data"]
    return data


def keep(path: Path, key: str, data: dict[str, Any]) -> None:
    """Write ``data`` under ``key``; a directory that cannot be made or written is only logged."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_atomic(path, json.dumps({"fingerprint": key, "data": data}, separators=(",", ":")).encode())
    except OSError as exc:
        log.debug("not kept in %s: %s", path, exc)
