"""Profile revisions as pure document transforms: compare-and-swap checks, a new profile at
revision 1, the next revision (the current one joins a bounded history), use counting, and
setting or removing one profile in a document. No files, no locks: ``store.profiles`` runs these
under its locks on a fresh read of the file and writes what they return.

Documents are the plain data ``tomllib`` reads; a transform never modifies its input (other
profiles' data is shared, not copied) and keeps the key order a human arranged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from serial_mcp import messages
from serial_mcp.core.profile_model import HISTORY_LIMIT, Profile
from serial_mcp.errors import Conflict, ErrorCode, NotFound, SerialMcpError


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One read of the file: its bytes (None = no file), its data and the validated profiles."""

    raw: bytes | None
    data: dict[str, Any]
    profiles: dict[str, Profile]


EMPTY_SNAPSHOT = Snapshot(None, {}, {})
Op = Callable[[Snapshot, datetime], dict[str, Any] | None]


def known_profiles(snap: Snapshot | None) -> dict[str, tuple[Any, Profile]]:
    """(data, validated profile) per name of an earlier snapshot, for re-validation shortcuts."""
    if snap is None:
        return {}
    data = snap.data.get("profiles", {})
    return {name: (data[name], profile) for name, profile in snap.profiles.items()}


def existing_profile(snap: Snapshot, name: str, expected: int | None) -> Profile:
    current = snap.profiles.get(name)
    if current is None:
        if expected is not None:
            raise conflict(name, None, expected)
        known = ", ".join(sorted(snap.profiles)) or "none"
        raise NotFound(
            ErrorCode.PROFILE_NOT_FOUND,
            messages.PROFILE_NOT_FOUND.format(name=name, known=known),
            profile=name,
        )
    check_cas(current, expected)
    return current


def check_cas(current: Profile, expected: int | None) -> None:
    if expected is not None and expected != current.revision:
        raise conflict(current.name, current.revision, expected)


def conflict(name: str, current: int | None, expected: int) -> SerialMcpError:
    if current is None:
        text = messages.PROFILE_REVISION_GONE.format(name=name, expected=expected)
    else:
        text = messages.PROFILE_REVISION_CONFLICT.format(name=name, current=current, expected=expected)
    return Conflict(
        ErrorCode.REVISION_CONFLICT, text, profile=name, current_revision=current, expected_revision=expected
    )


def _metadata(
    revision: int,
    created: datetime | None,
    updated: datetime | None,
    last_used: datetime | None,
    use_count: int,
    generated: bool,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"revision": revision}
    for key, when in (("created", created), ("updated", updated), ("last_used", last_used)):
        if when is not None:
            meta[key] = when
    meta["use_count"] = use_count
    meta["generated"] = generated
    return meta


def fresh_profile(
    selector: dict[str, str], defaults: dict[str, Any], now: datetime, generated: bool
) -> dict[str, Any]:
    return {
        "selector": dict(selector),
        "defaults": copy.deepcopy(defaults),
        "metadata": _metadata(1, now, now, None, 0, generated),
    }


def next_revision(
    snap: Snapshot,
    current: Profile,
    selector: dict[str, str],
    defaults: dict[str, Any],
    now: datetime,
    generated: bool | None = None,
) -> dict[str, Any]:
    """The profile's data one revision later: the current revision joins ``history`` (oldest
    dropped beyond 5); retained entries keep their stored form byte for byte."""
    old: dict[str, Any] = snap.data["profiles"][current.name]
    entry: dict[str, Any] = {"revision": current.revision}
    if current.updated is not None:
        entry["updated"] = current.updated
    entry["selector"] = dict(current.selector)
    entry["defaults"] = copy.deepcopy(current.defaults)
    history = [*old.get("history", []), entry][-HISTORY_LIMIT:]
    new = {
        "selector": dict(selector),
        "defaults": copy.deepcopy(defaults),
        "metadata": _metadata(
            current.revision + 1,
            current.created,
            now,
            current.last_used,
            current.use_count,
            current.generated if generated is None else generated,
        ),
        "history": history,
    }
    out: dict[str, Any] = _ordered_like(old, new)
    return out


def with_key_after(table: dict[str, Any], anchor: str, key: str, value: Any) -> dict[str, Any]:
    """``table`` with ``key`` set; a new key goes right after ``anchor`` (if present), so the
    first ``last_used`` lands next to ``updated`` instead of at the end."""
    if key in table or anchor not in table:
        return {**table, key: value}
    out: dict[str, Any] = {}
    for k, v in table.items():
        out[k] = v
        if k == anchor:
            out[key] = value
    return out


def with_profile(data: dict[str, Any], name: str, pdata: dict[str, Any] | None) -> dict[str, Any]:
    """A new document with one profile set (or removed when ``pdata`` is None); every other
    profile's data is shared, not copied, and never modified."""
    new = dict(data)
    profiles = dict(data.get("profiles", {}))
    if pdata is None:
        profiles.pop(name, None)
    else:
        profiles[name] = pdata
    new["profiles"] = profiles
    if not profiles:  # no table at all rather than an empty [profiles] header
        del new["profiles"]
    return new


def _ordered_like(old: Any, new: Any) -> Any:
    """``new`` with the keys ``old`` already had in ``old``'s order (new keys appended), so a
    rewrite of one profile never reorders what a human arranged."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = {k: _ordered_like(old[k], new[k]) for k in old if k in new}
        out.update((k, v) for k, v in new.items() if k not in out)
        return out
    return new
