"""What a front door shows of an engine result (issue 26): its one-line text and its lean structured
form (the MCP tools), or every field (the CLI's ``--json``). The engine fills every field; what an
answer leaves out is decided here, once, for the front doors.

Lean: no field that is null or at its default, unless the call asked for ``verbose``; and what
follows from another field is left out too (``ReadResult`` and ``TransactResult`` derive it again
when a lean result is read back, so the lean form is the same result). A frame's arrival time ``t``
is shown only with ``verbose``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from serial_mcp.engine.results import TransactResult

__all__ = ["full", "lean_read", "structured", "text"]


def text(result: BaseModel) -> str | None:
    """A result's one-line summary (None: the result has none)."""
    summary = getattr(result, "summary", None)
    return summary() if callable(summary) else None


def full(result: BaseModel) -> dict[str, Any]:
    """Every field of a result, nulls and defaults too (the CLI's ``--json``: a script's input)."""
    return result.model_dump(mode="json")


def structured(result: BaseModel, verbose: bool = False) -> dict[str, Any]:
    """A result as structuredContent: lean, or with ``verbose`` every field that has a value."""
    out = result.model_dump(mode="json", exclude_none=True, exclude_defaults=not verbose)
    if not verbose:
        for read in _reads_in(out):
            lean_read(read)
        if isinstance(result, TransactResult):  # the call's own connection; its tx total is get_status's
            out["write"].pop("connection_id", None)
            out["write"].pop("tx_bytes", None)
            if result.mark_offset == result.read.from_offset:
                out.pop("mark_offset", None)
            if result.steps is not None:  # the last step's read, in steps already
                out.pop("read", None)
    return out


def _reads_in(out: dict[str, Any]) -> list[dict[str, Any]]:
    """The read results inside a dumped result: itself (read), its ``read`` (transact,
    capture_boot) and each step's."""
    reads = [out] if "stop_reason" in out and "from_offset" in out else []
    if isinstance(out.get("read"), dict):
        reads.append(out["read"])
    reads += [s["read"] for s in out.get("steps", []) if isinstance(s.get("read"), dict)]
    return reads


def lean_read(read: dict[str, Any]) -> None:
    """Leave out of a dumped read what ``ReadResult`` derives again when it is read back:
    ``matched`` (a ``match_index`` says it), a byte match's ``match_offset`` and each frame's
    ``index`` (its place in ``frames``); and each frame's arrival time (``verbose`` shows it)."""
    for frame in read.get("frames", []):
        frame.pop("index", None)
        frame.pop("t", None)
    if "frames" not in read and "counts" not in read:
        read.setdefault("data", "")  # a byte read always says what it read, even nothing
    if "match_index" in read:
        read.pop("matched", None)
        if "frames" not in read and read.get("match_offset") == read["from_offset"] + read["match_index"]:
            del read["match_offset"]
