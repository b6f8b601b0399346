"""Device profiles: one TOML file shared by every serial-mcp process on the machine.

Each profile remembers a device (``selector``) and how to talk to it (``defaults``), with a
revision number for compare-and-swap and the 5 previous revisions for rollback.

Every mutation runs: in-process lock -> ``filelock`` on ``<file>.lock`` -> re-read the file ->
apply -> write a temp file in the same directory -> flush + fsync -> ``os.replace`` -> fsync the
directory -> publish to the in-memory cache -> unlock. Nothing touches the real file before
``os.replace``, so any failure (or a crash) leaves it byte-identical; an unreadable, corrupt or
future-version file is refused and never written.

Two ways to produce the new text: when the file is exactly what this module would render from
its data (no hand edits beyond a leading comment block), it is re-rendered directly (fast); any
other file is edited in place with ``tomlkit``, which keeps comments, formatting and key order.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import json
import math
import os
import re
import stat
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from datetime import time as dtime
from pathlib import Path
from typing import Any, Final

import filelock
import platformdirs
import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Comment, InlineTable, Null, Table, Whitespace

from serial_mcp import messages
from serial_mcp.core.framing.options import did_you_mean
from serial_mcp.core.identity import (
    NAME_RE,
    most_recent_first,
    selector_matches,
    validate_selector,
)
from serial_mcp.core.pace import parse_pace
from serial_mcp.core.reconnect import parse_policy
from serial_mcp.core.ring import MAX_CAPACITY, MIN_CAPACITY
from serial_mcp.core.settings import SerialSettings, validate_settings
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial.ports import PortInfo

__all__ = [
    "DEFAULT_FIELDS",
    "HISTORY_LIMIT",
    "PROFILES_ENV",
    "SCHEMA_VERSION",
    "Profile",
    "ProfileRevision",
    "ProfileStore",
    "ProfileStoreError",
    "default_profiles_path",
    "resolve_profiles_path",
    "validate_defaults",
    "validate_name",
]

SCHEMA_VERSION: Final = 1
HISTORY_LIMIT: Final = 5
PROFILES_ENV: Final = "SERIAL_MCP_PROFILES"
APP_NAME: Final = "serial-mcp"
FILE_NAME: Final = "profiles.toml"

SERIAL_FIELDS = ("baud_rate", "data_bits", "parity", "stop_bits", "flow_control")
TABLE_FIELDS = ("rx_framing", "tx_framing", "rx_parser")
DEFAULT_FIELDS = (
    *SERIAL_FIELDS,
    "protocol",
    *TABLE_FIELDS,
    "rx_buffer_size",
    "reconnect",
    "pace",
)
_PROFILE_KEYS = ("selector", "defaults", "metadata", "history")
_METADATA_KEYS = ("revision", "created", "updated", "last_used", "use_count", "generated")
_HISTORY_KEYS = ("revision", "updated", "selector", "defaults")
_TOP_KEYS = ("schema_version", "profiles")

_LOCK_POLL_S = 0.005  # lock hand-over latency between processes; polling a local lock is cheap
_TABLE_DEPTH = 3  # profiles.<name>.<section> render as [tables]; anything deeper is inline
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_INT64 = (-(2**63), 2**63 - 1)

_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


class ProfileStoreError(SerialMcpError):
    """The profiles file cannot be used (unreadable, not TOML, invalid, newer schema).

    Code ``profile_store_invalid``; the message is one line and the file was not modified.
    At startup this is fatal: print the message and exit non-zero.
    """

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("profile_store_invalid", message, **details)


# --- paths -----------------------------------------------------------------------------------------


def default_profiles_path() -> Path:
    """``<user config dir>/serial-mcp/profiles.toml`` (platformdirs: XDG, macOS, Windows)."""
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / FILE_NAME


def resolve_profiles_path(flag: str | None, env: Mapping[str, str]) -> Path:
    """The profiles file to use: ``--profiles-path`` > ``$SERIAL_MCP_PROFILES`` > default.

    Empty values count as unset; ``~`` is expanded and the result made absolute (so a later
    change of working directory cannot move the store).
    """
    for candidate in (flag, env.get(PROFILES_ENV)):
        if candidate:
            return Path(candidate).expanduser().absolute()
    return default_profiles_path()


# --- the profile value -------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Deep copy with date/times as ISO-8601 strings (everything else already JSON-shaped)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime | date | dtime):
        return _iso(value)
    return value


def _iso(value: datetime | date | dtime) -> str:
    text = value.isoformat()
    if isinstance(value, datetime) and value.utcoffset() is not None and not value.utcoffset():
        text = text.removesuffix("+00:00") + "Z"
    return text


@dataclass(frozen=True, slots=True)
class ProfileRevision:
    """One retained earlier revision of a profile (for rollback)."""

    revision: int
    updated: datetime | None
    selector: dict[str, str]
    defaults: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "revision": self.revision,
            "updated": None if self.updated is None else _iso(self.updated),
            "selector": dict(self.selector),
            "defaults": _jsonable(self.defaults),
        }


@dataclass(frozen=True, slots=True)
class Profile:
    """A stored profile as of one moment (a snapshot: changing it changes nothing on disk).

    ``selector`` says which device it is for, ``defaults`` the connection settings to open it
    with (only the fields the profile sets). ``revision`` increases with every change of either;
    ``history`` holds up to 5 earlier revisions, oldest first.
    """

    name: str
    selector: dict[str, str]
    defaults: dict[str, Any]
    revision: int = 1
    created: datetime | None = None
    updated: datetime | None = None
    last_used: datetime | None = None
    use_count: int = 0
    generated: bool = False
    history: tuple[ProfileRevision, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form mirroring the TOML layout (times as ISO-8601 strings)."""
        return {
            "name": self.name,
            "selector": dict(self.selector),
            "defaults": _jsonable(self.defaults),
            "metadata": {
                "revision": self.revision,
                "created": None if self.created is None else _iso(self.created),
                "updated": None if self.updated is None else _iso(self.updated),
                "last_used": None if self.last_used is None else _iso(self.last_used),
                "use_count": self.use_count,
                "generated": self.generated,
            },
            "history": [h.as_dict() for h in self.history],
        }


# --- validation ----------------------------------------------------------------------------------------


def validate_name(name: object) -> str:
    """A profile name: 1-64 of ``[A-Za-z0-9._-]``, starting with a letter or digit."""
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None:
        raise InvalidArgument(messages.PROFILE_BAD_NAME.format(name=name))
    return name


def _check_revision_arg(field: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(
            messages.PROFILE_BAD_FIELD.format(
                field=field, expected=messages.PROFILE_EXPECT_REVISION, value=value
            )
        )
    return value


def _storable(value: Any, field: str) -> Any:
    """A plain deep copy that TOML can hold: None entries of objects are dropped (TOML has no
    null); anything else TOML cannot store is an InvalidArgument naming ``field``."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgument(messages.PROFILE_NOT_STORABLE.format(field=field, value=key))
            if item is not None:
                out[key] = _storable(item, f"{field}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [_storable(item, f"{field}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, bool | float | datetime | date | dtime):
        return value
    if isinstance(value, int) and _INT64[0] <= value <= _INT64[1]:
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return value
    raise InvalidArgument(messages.PROFILE_NOT_STORABLE.format(field=field, value=value))


def _check_keys(raw: Mapping[str, Any], allowed: tuple[str, ...], field: str) -> None:
    for key in raw:
        if key not in allowed:
            raise InvalidArgument(
                messages.PROFILE_UNKNOWN_KEY.format(
                    field=field, key=key, hint=did_you_mean(key, allowed), allowed=", ".join(allowed)
                )
            )


def validate_defaults(raw: object, field: str = "defaults") -> dict[str, Any]:
    """Checked profile defaults, in canonical field order, None values dropped.

    The serial settings go through ``validate_settings`` (so parity ``N`` is stored as
    ``none``); reconnect and pace through their parsers; rx_buffer_size must fit the ring.
    ``rx_framing``, ``tx_framing`` and ``rx_parser`` only need to be objects: they are
    validated when a connection uses them.
    """
    if not isinstance(raw, Mapping):
        raise InvalidArgument(messages.PROFILE_NOT_OBJECT.format(field=field, value=raw))
    _check_keys(raw, DEFAULT_FIELDS, field)
    given = {k: raw[k] for k in DEFAULT_FIELDS if raw.get(k) is not None}
    serial = {k: v for k, v in given.items() if k in SERIAL_FIELDS}
    if "data_bits" in serial and (
        isinstance(serial["data_bits"], bool) or not isinstance(serial["data_bits"], int)
    ):
        raise InvalidArgument(messages.BAD_DATA_BITS.format(value=serial["data_bits"]))
    settings = validate_settings(SerialSettings(**serial)) if serial else None
    out: dict[str, Any] = {}
    for key, value in given.items():
        where = f"{field}.{key}"
        if key in SERIAL_FIELDS:
            out[key] = getattr(settings, key)
        elif key == "protocol":
            if not isinstance(value, str) or not value.strip():
                raise InvalidArgument(messages.PROFILE_BAD_PROTOCOL.format(field=where, value=value))
            out[key] = value
        elif key in TABLE_FIELDS:
            if not isinstance(value, Mapping):
                raise InvalidArgument(messages.PROFILE_NOT_OBJECT.format(field=where, value=value))
            out[key] = _storable(value, where)
        elif key == "rx_buffer_size":
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not MIN_CAPACITY <= value <= MAX_CAPACITY
            ):
                raise InvalidArgument(
                    messages.BAD_RX_BUFFER.format(value=value, min=MIN_CAPACITY, max=MAX_CAPACITY)
                )
            out[key] = value
        elif key == "reconnect":
            if isinstance(value, bool):
                out[key] = value
            elif isinstance(value, Mapping):
                stored = _storable(value, where)
                parse_policy(dict(stored))
                out[key] = stored
            else:
                raise InvalidArgument(messages.PROFILE_BAD_RECONNECT.format(field=where, value=value))
        else:  # pace
            if not isinstance(value, Mapping):
                raise InvalidArgument(messages.PROFILE_NOT_OBJECT.format(field=where, value=value))
            stored = _storable(value, where)
            parse_pace(dict(stored))
            out[key] = stored
    return out


def _time(value: object, field: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise InvalidArgument(
            messages.PROFILE_BAD_FIELD.format(field=field, expected=messages.PROFILE_EXPECT_TIME, value=value)
        )
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _int_at_least(value: object, low: int, field: str, expected: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidArgument(messages.PROFILE_BAD_FIELD.format(field=field, expected=expected, value=value))
    return value


def _table(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidArgument(messages.PROFILE_NOT_OBJECT.format(field=field, value=value))
    return value


def _profile_from_data(name: str, raw: object) -> Profile:
    """Validate one ``profiles.<name>`` table as read from the file (InvalidArgument if bad)."""
    validate_name(name)
    pdata = _table(raw, "profile")
    _check_keys(pdata, _PROFILE_KEYS, "profile")
    if "selector" not in pdata:
        raise InvalidArgument(messages.PROFILE_MISSING.format(field="selector"))
    selector = validate_selector(pdata["selector"])
    defaults = validate_defaults(pdata.get("defaults", {}))
    meta = _table(pdata.get("metadata", {}), "metadata")
    _check_keys(meta, _METADATA_KEYS, "metadata")
    revision = _int_at_least(
        meta.get("revision", 1), 1, "metadata.revision", messages.PROFILE_EXPECT_REVISION
    )
    use_count = _int_at_least(
        meta.get("use_count", 0), 0, "metadata.use_count", messages.PROFILE_EXPECT_COUNT
    )
    generated = meta.get("generated", False)
    if not isinstance(generated, bool):
        raise InvalidArgument(
            messages.PROFILE_BAD_FIELD.format(
                field="metadata.generated", expected=messages.PROFILE_EXPECT_BOOL, value=generated
            )
        )
    raw_history = pdata.get("history", [])
    if not isinstance(raw_history, list):
        raise InvalidArgument(
            messages.PROFILE_BAD_FIELD.format(
                field="history", expected=messages.PROFILE_EXPECT_LIST, value=raw_history
            )
        )
    history: list[ProfileRevision] = []
    seen: set[int] = set()
    for i, raw_entry in enumerate(raw_history):
        where = f"history[{i}]"
        entry = _table(raw_entry, where)
        _check_keys(entry, _HISTORY_KEYS, where)
        rev = _int_at_least(entry.get("revision"), 1, f"{where}.revision", messages.PROFILE_EXPECT_REVISION)
        if rev >= revision or rev in seen:
            raise InvalidArgument(
                messages.PROFILE_BAD_HISTORY.format(field=where, revision=rev, current=revision)
            )
        seen.add(rev)
        if "selector" not in entry:
            raise InvalidArgument(messages.PROFILE_MISSING.format(field=f"{where}.selector"))
        history.append(
            ProfileRevision(
                revision=rev,
                updated=_time(entry.get("updated"), f"{where}.updated"),
                selector=validate_selector(entry["selector"], f"{where}.selector"),
                defaults=validate_defaults(entry.get("defaults", {}), f"{where}.defaults"),
            )
        )
    return Profile(
        name=name,
        selector=selector,
        defaults=defaults,
        revision=revision,
        created=_time(meta.get("created"), "metadata.created"),
        updated=_time(meta.get("updated"), "metadata.updated"),
        last_used=_time(meta.get("last_used"), "metadata.last_used"),
        use_count=use_count,
        generated=generated,
        history=tuple(history),
    )


def _profiles_from_document(
    data: Mapping[str, Any], path: Path, known: Mapping[str, tuple[Any, Profile]] | None = None
) -> dict[str, Profile]:
    """Validate a whole document; ProfileStoreError (one line, naming the place) if unusable.

    A document with no keys at all (empty, or comments only) is an empty store. ``known`` maps
    names to (data, profile) already validated: a profile whose data is identical (``_same``)
    is reused instead of validated again - a write changes one profile, not all.
    """
    if not data:
        return {}
    if "schema_version" not in data:
        raise ProfileStoreError(messages.PROFILE_STORE_NO_VERSION.format(path=path, current=SCHEMA_VERSION))
    version = data["schema_version"]
    if version != SCHEMA_VERSION or isinstance(version, bool) or not isinstance(version, int):
        template = (
            messages.PROFILE_STORE_VERSION_NEW
            if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION
            else messages.PROFILE_STORE_VERSION_BAD
        )
        raise ProfileStoreError(
            template.format(path=path, version=version, current=SCHEMA_VERSION), version=version
        )
    where = "the top level"
    try:
        _check_keys(data, _TOP_KEYS, "the file")
        where = "profiles"
        profiles = _table(data.get("profiles", {}), "profiles")
        out: dict[str, Profile] = {}
        for name, raw in profiles.items():
            where = f"profiles.{_key(name)}"
            seen = known.get(name) if known else None
            reuse = seen is not None and _same(seen[0], raw)
            out[name] = seen[1] if seen is not None and reuse else _profile_from_data(name, raw)
        return out
    except InvalidArgument as exc:
        raise ProfileStoreError(
            messages.PROFILE_STORE_INVALID.format(path=path, where=where, error=exc.message), where=where
        ) from exc


# --- rendering --------------------------------------------------------------------------------------------


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    # JSON escapes are valid TOML basic-string escapes; TOML additionally forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    """One TOML value, inline (tables as ``{k = v}``, arrays on one line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime | date | dtime):
        return _iso(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__} as TOML")


def _is_table(value: Any, depth: int) -> bool:
    return isinstance(value, dict) and depth <= _TABLE_DEPTH


def _is_aot(value: Any, depth: int) -> bool:
    return (
        depth == _TABLE_DEPTH
        and isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) for v in value)
    )


def _render_table(path: tuple[str, ...], table: dict[str, Any], out: list[str]) -> None:
    depth = len(path) + 1  # depth of the table's children
    scalars = [(k, v) for k, v in table.items() if not _is_table(v, depth) and not _is_aot(v, depth)]
    if path and (scalars or not table):
        out.append(f"\n[{'.'.join(_key(p) for p in path)}]\n")
    out.extend(f"{_key(k)} = {_value(v)}\n" for k, v in scalars)
    for key, value in table.items():
        if _is_table(value, depth):
            _render_table((*path, key), value, out)
        elif _is_aot(value, depth):
            header = ".".join(_key(p) for p in (*path, key))
            for entry in value:
                out.append(f"\n[[{header}]]\n")
                out.extend(f"{_key(k)} = {_value(v)}\n" for k, v in entry.items())


def _render_body(data: dict[str, Any]) -> str:
    """The canonical text of a document (without the leading comment block)."""
    out: list[str] = []
    _render_table((), data, out)
    return "".join(out)


def _split_header(text: str) -> tuple[str, str]:
    """(leading comment/blank lines, the rest): the header survives the fast path verbatim."""
    pos = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        pos += len(line)
    return text[:pos], text[pos:]


def _same(a: Any, b: Any) -> bool:
    """Structural equality that also compares types (``True`` is not ``1``, ``1.0`` is not ``1``)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


# --- in-place edit of a hand-edited file (tomlkit keeps comments, formatting and order) ------------------


def _tk_inline(value: Any) -> Any:
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        for k, v in value.items():
            table[k] = _tk_inline(v)
        return table
    if isinstance(value, list):
        array = tomlkit.array()
        for v in value:
            array.append(_tk_inline(v))
        return array
    return tomlkit.item(value)


def _tk_item(value: Any, depth: int) -> Any:
    """A new tomlkit item laid out like the canonical renderer (tables to depth 3, inline below)."""
    if _is_table(value, depth):
        has_scalars = any(not _is_table(v, depth + 1) and not _is_aot(v, depth + 1) for v in value.values())
        table = tomlkit.table(is_super_table=bool(value) and not has_scalars)
        for k, v in value.items():
            table.append(k, _tk_item(v, depth + 1))
        return table
    if _is_aot(value, depth):
        aot = tomlkit.aot()
        for entry in value:
            aot.append(_tk_aot_entry(entry))
        return aot
    return _tk_inline(value)


def _tk_aot_entry(entry: dict[str, Any]) -> Table:
    table = tomlkit.table()
    for k, v in entry.items():
        table.append(k, _tk_inline(v))
    return table


def _sync(container: Any, old: Mapping[str, Any], new: Mapping[str, Any], depth: int) -> None:
    """Edit ``container`` (whose data is ``old``) in place until its data is ``new``; unchanged
    items are not touched, so their comments and formatting survive."""
    inline = isinstance(container, InlineTable)  # a hand-written {...} can only hold inline values
    for key in [k for k in old if k not in new]:
        _tk_delete(container, key)
    for key, value in new.items():
        if key not in old:
            _tk_insert(container, key, _tk_inline(value) if inline else _tk_item(value, depth))
            continue
        before = old[key]
        if _same(before, value):
            continue
        item = container[key]
        if isinstance(before, dict) and isinstance(value, dict) and isinstance(item, Mapping):
            _sync(item, before, value, depth + 1)
        elif isinstance(item, AoT) and _is_aot(value, depth) and isinstance(before, list):
            _sync_aot(item, before, value)
        else:
            container[key] = _tk_inline(value) if inline else _tk_item(value, depth)


def _sync_aot(aot: AoT, old: list[Any], new: list[Any]) -> None:
    """History moves like a queue (append at the end, trim at the front): keep the entries that
    survive untouched, rebuild only when the change is anything else."""
    for drop in range(len(old) + 1):
        kept = old[drop:]
        if len(kept) <= len(new) and all(_same(a, b) for a, b in zip(kept, new, strict=False)):
            for _ in range(drop):
                del aot[0]
            for entry in new[len(kept) :]:
                _aot_append(aot, entry)
            return
    raise AssertionError("unreachable: dropping every old entry always matches")


# tomlkit files the comments above a [header] under the table before it. These helpers keep such
# a block (from the last blank line on) in front of the header it precedes when we add or delete
# tables, instead of letting it drift onto the new neighbour.


def _body(item: Any) -> list[tuple[Any, Any]]:
    body: list[tuple[Any, Any]] = item.body if isinstance(item, Container) else item.value.body
    return body


def _leaf(item: Any) -> Table | None:
    """The table rendered last inside ``item`` (where the next header's comments live)."""
    if isinstance(item, AoT):
        return _leaf(item.body[-1]) if item.body else None
    if isinstance(item, Table | Container):
        keyed = [v for k, v in _body(item) if k is not None]
        if keyed and isinstance(keyed[-1], Table | AoT):
            found = _leaf(keyed[-1])
            if found is not None:
                return found
        return item if isinstance(item, Table) else None
    return None


def _last_blank(body: list[tuple[Any, Any]]) -> tuple[int, int | None]:
    """Where the comment/blank-line run ending ``body`` starts, and its last blank line (if any)."""
    start = len(body)
    while start and body[start - 1][0] is None and isinstance(body[start - 1][1], Whitespace | Comment):
        start -= 1
    blanks = [i for i in range(start, len(body)) if isinstance(body[i][1], Whitespace)]
    return start, (blanks[-1] if blanks else None)


def _take_leading_block(table: Table | None) -> list[Any]:
    """Remove and return the comments that precede the next header: the run ending ``table``
    from its last blank line on (the whole run if it has none); comments right under the
    table's last key stay with it."""
    if table is None:
        return []
    body = table.value.body
    start, blank = _last_blank(body)
    cut = start if blank is None else blank
    taken = [item for _, item in body[cut:]]
    del body[cut:]
    return taken


def _give_block(target: Any, block: list[Any]) -> None:
    body = _body(target)
    if block and isinstance(block[0], Whitespace) and body and isinstance(body[-1][1], Whitespace):
        block = block[1:]  # one blank line between sections is enough
    for item in block:
        body.append((None, item))


def _drop_attached_comments(table: Table | None) -> None:
    """Delete the comments directly above the header that follows ``table`` (after its last blank
    line): they described a table being deleted. Without a blank line nothing is removed, since
    those comments may as well describe ``table``'s last key."""
    if table is None:
        return
    body = table.value.body
    _, blank = _last_blank(body)
    if blank is not None:
        del body[blank + 1 :]


def _tk_insert(container: Any, key: str, item: Any) -> None:
    """Add a key; the comments above the next header move down to stay above it."""
    before = _leaf(container)
    if isinstance(item, Table | AoT) or before is container:
        block = _take_leading_block(before)
        container[key] = item
        _give_block(_leaf(container[key]) or container, block)
    else:
        container[key] = item


def _tk_delete(container: Any, key: str) -> None:
    """Delete a key; for a table, its comments go with it, while the comments above the next
    header (at the end of its last table) stay where the deleted table was."""
    item = container[key]
    if not isinstance(item, Table | AoT):
        del container[key]
        return
    block = _take_leading_block(_leaf(item))
    body = _body(container)
    slot, previous = -1, None
    for i, (k, v) in enumerate(body):
        if k is not None and k.key == key:
            slot = i
            break
        if k is not None and isinstance(v, Table | AoT):
            previous = v
    del container[key]
    before = _leaf(previous) if previous is not None else None
    _drop_attached_comments(before)
    if before is not None and block and isinstance(block[0], Whitespace):
        tail = _body(before)
        if tail and isinstance(tail[-1][1], Whitespace):
            block = block[1:]
    # tomlkit leaves a Null placeholder where the table was: put the block there, as one item.
    if block and 0 <= slot < len(body) and body[slot][0] is None and isinstance(body[slot][1], Null):
        body[slot] = (None, Whitespace("".join(b.as_string() for b in block)))
    elif before is not None:
        _give_block(before, block)


def _aot_append(aot: AoT, entry: dict[str, Any]) -> None:
    """Append a history entry after a blank line; the next header's comments move below it."""
    last = aot.body[-1] if aot.body else None
    block = _take_leading_block(last)
    if last is not None and not last.as_string().endswith("\n\n"):
        last.add(tomlkit.nl())
    table = _tk_aot_entry(entry)
    aot.append(table)
    _give_block(table, block)


def _ordered_like(old: Any, new: Any) -> Any:
    """``new`` with the keys ``old`` already had in ``old``'s order (new keys appended), so a
    rewrite of one profile never reorders what a human arranged."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = {k: _ordered_like(old[k], new[k]) for k in old if k in new}
        out.update((k, v) for k, v in new.items() if k not in out)
        return out
    return new


# --- the store -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """One read of the file: its bytes (None = no file), its data and the validated profiles."""

    raw: bytes | None
    data: dict[str, Any]
    profiles: dict[str, Profile]


_EMPTY = _Snapshot(None, {}, {})
Op = Callable[[_Snapshot, datetime], dict[str, Any] | None]


def _known(snap: _Snapshot | None) -> dict[str, tuple[Any, Profile]]:
    """(data, validated profile) per name of an earlier snapshot, for re-validation shortcuts."""
    if snap is None:
        return {}
    data = snap.data.get("profiles", {})
    return {name: (data[name], profile) for name, profile in snap.profiles.items()}


def _process_lock(path: Path) -> threading.Lock:
    key = os.path.normcase(str(path))
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(key, threading.Lock())


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ProfileStore:
    """The profiles file: cached reads, locked compare-and-swap writes.

    Reads (``list``, ``get``, ``find_matches``) re-read the file and re-parse it only when its
    bytes changed, so every process sees the others' writes. Mutations are serialised by an
    in-process lock plus ``<file>.lock`` and always start from a fresh read under the lock, so
    no update is lost. All methods block (file I/O, fsync, lock waits up to ``lock_timeout``):
    call them from a worker thread in async code. Every failure is a ``SerialMcpError``:
    ``invalid_argument``, ``profile_not_found``, ``profile_exists``, ``revision_conflict``,
    ``profile_store_invalid`` (ProfileStoreError) or ``profile_store_io``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lock_timeout: float = 10.0,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        # Symlinks are followed, so a symlinked config (dotfile managers) stays a symlink.
        self._path = Path(path).expanduser().resolve()
        self._lock_path = self._path.with_name(self._path.name + ".lock")
        self._lock_timeout = lock_timeout
        self._clock = clock
        self._thread_lock = _process_lock(self._path)
        self._file_lock = filelock.FileLock(str(self._lock_path))
        self._cache: _Snapshot | None = None

    @property
    def path(self) -> Path:
        """The TOML file."""
        return self._path

    @property
    def lock_path(self) -> Path:
        """The lock file next to it (``<file>.lock``)."""
        return self._lock_path

    # -- reads --------------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read and validate the file now (a missing file is an empty store and is not created).

        Raises ProfileStoreError for an unreadable, corrupt or future-version file: at startup,
        print its message and exit non-zero.
        """
        self._current()

    def list(self) -> builtins.list[Profile]:
        """Every profile, sorted by name."""
        snap = self._current()
        return [copy.deepcopy(snap.profiles[name]) for name in sorted(snap.profiles)]

    def get(self, name: str) -> Profile | None:
        """The profile called ``name``, or None."""
        found = self._current().profiles.get(name)
        return None if found is None else copy.deepcopy(found)

    def find_matches(self, port: PortInfo) -> builtins.list[Profile]:
        """Profiles whose selector matches ``port``, most recently used first."""
        snap = self._current()
        matches = [p for p in snap.profiles.values() if selector_matches(p.selector, port)]
        return [copy.deepcopy(p) for p in most_recent_first(matches)]

    # -- mutations ------------------------------------------------------------------------------------------

    def create(
        self,
        name: str,
        selector: Mapping[str, Any],
        defaults: Mapping[str, Any],
        generated: bool = False,
    ) -> Profile:
        """Create a new profile at revision 1; ``profile_exists`` if the name is taken."""
        name = validate_name(name)
        sel = validate_selector(selector)
        dflt = validate_defaults(defaults)

        def op(snap: _Snapshot, now: datetime) -> dict[str, Any]:
            current = snap.profiles.get(name)
            if current is not None:
                raise SerialMcpError(
                    "profile_exists",
                    messages.PROFILE_EXISTS.format(name=name, revision=current.revision),
                    profile=name,
                    revision=current.revision,
                )
            return _with_profile(snap.data, name, _fresh_profile(sel, dflt, now, generated))

        return self._result(self._mutate(op), name)

    def update(
        self,
        name: str,
        *,
        expected_revision: int | None,
        selector: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
        replace: bool = False,
        unset: Collection[str] = (),
    ) -> Profile:
        """Change a profile as a new revision (the old one goes to ``history``).

        ``selector`` (if given) replaces the whole selector. ``defaults`` is merged: only the
        fields given change (None values are ignored); ``unset`` names fields to remove;
        ``replace=True`` makes ``defaults`` the complete new defaults instead. A change that
        changes nothing writes nothing and returns the profile as it is (same revision).

        ``expected_revision`` is the compare-and-swap guard: if the stored revision differs,
        ``revision_conflict`` (naming both) and nothing is written. None applies the change to
        whatever is current - safe for a merge of explicit fields, never a lost update, because
        the merge happens on a fresh read under the lock.
        """
        name = validate_name(name)
        expected = _check_revision_arg("expected_revision", expected_revision)
        sel = None if selector is None else validate_selector(selector)
        if replace and defaults is None:
            raise InvalidArgument(messages.PROFILE_REPLACE_NEEDS_DEFAULTS)
        given = {} if defaults is None else validate_defaults(defaults)
        removed = [unset] if isinstance(unset, str) else builtins.list(unset)
        _check_keys(dict.fromkeys(removed), DEFAULT_FIELDS, "unset")
        for key in removed:
            if key in given:
                raise InvalidArgument(messages.PROFILE_UNSET_AND_SET.format(key=key))

        def op(snap: _Snapshot, now: datetime) -> dict[str, Any] | None:
            current = _existing(snap, name, expected)
            if replace:
                merged = dict(given)
            else:
                merged = copy.deepcopy(current.defaults)
                merged.update(given)
            for key in removed:
                merged.pop(key, None)
            merged = validate_defaults(merged)
            new_sel = current.selector if sel is None else sel
            if _same(new_sel, current.selector) and _same(merged, current.defaults):
                return None
            return _with_profile(snap.data, name, _next_revision(snap, current, new_sel, merged, now))

        return self._result(self._mutate(op), name)

    def save(
        self,
        name: str,
        selector: Mapping[str, Any],
        defaults: Mapping[str, Any],
        overwrite: bool,
        expected_revision: int | None = None,
    ) -> Profile:
        """Create ``name``, or with ``overwrite`` replace its selector and defaults as a new
        revision (it then counts as user-made: ``generated`` becomes false).

        Without ``overwrite`` an existing name is ``profile_exists``. With ``expected_revision``
        the replace is compare-and-swap (a profile deleted meanwhile is a ``revision_conflict``).
        """
        name = validate_name(name)
        sel = validate_selector(selector)
        dflt = validate_defaults(defaults)
        expected = _check_revision_arg("expected_revision", expected_revision)

        def op(snap: _Snapshot, now: datetime) -> dict[str, Any] | None:
            current = snap.profiles.get(name)
            if current is None:
                if expected is not None:
                    raise _conflict(name, None, expected)
                return _with_profile(snap.data, name, _fresh_profile(sel, dflt, now, False))
            if not overwrite:
                raise SerialMcpError(
                    "profile_exists",
                    messages.PROFILE_EXISTS_SAVE.format(name=name, revision=current.revision),
                    profile=name,
                    revision=current.revision,
                )
            _check_cas(current, expected)
            if _same(sel, current.selector) and _same(dflt, current.defaults) and not current.generated:
                return None
            pdata = _next_revision(snap, current, sel, dflt, now, generated=False)
            return _with_profile(snap.data, name, pdata)

        return self._result(self._mutate(op), name)

    def delete(self, name: str, expected_revision: int | None = None) -> Profile:
        """Remove a profile (compare-and-swap when ``expected_revision`` is given); returns it
        as it was."""
        name = validate_name(name)
        expected = _check_revision_arg("expected_revision", expected_revision)
        deleted: builtins.list[Profile] = []

        def op(snap: _Snapshot, now: datetime) -> dict[str, Any]:
            deleted.append(_existing(snap, name, expected))
            return _with_profile(snap.data, name, None)

        self._mutate(op)
        return deleted[0]

    def rollback(self, name: str, to_revision: int, expected_revision: int | None) -> Profile:
        """Restore the selector and defaults of retained revision ``to_revision`` as a new
        revision (history is never rewritten), guarded by ``expected_revision``."""
        name = validate_name(name)
        target = _check_revision_arg("to_revision", to_revision)
        expected = _check_revision_arg("expected_revision", expected_revision)
        if target is None:
            raise InvalidArgument(
                messages.PROFILE_BAD_FIELD.format(
                    field="to_revision", expected=messages.PROFILE_EXPECT_REVISION, value=to_revision
                )
            )

        def op(snap: _Snapshot, now: datetime) -> dict[str, Any]:
            current = _existing(snap, name, expected)
            if target == current.revision:
                raise InvalidArgument(messages.PROFILE_ROLLBACK_CURRENT.format(name=name, revision=target))
            entry = next((h for h in current.history if h.revision == target), None)
            if entry is None:
                retained = ", ".join(str(h.revision) for h in current.history) or "none"
                raise InvalidArgument(
                    messages.PROFILE_ROLLBACK_UNKNOWN.format(name=name, revision=target, retained=retained)
                )
            pdata = _next_revision(snap, current, entry.selector, entry.defaults, now)
            return _with_profile(snap.data, name, pdata)

        return self._result(self._mutate(op), name)

    def touch_used(self, name: str) -> Profile:
        """Record a use (``last_used`` = now, ``use_count`` + 1). Not a revision: no
        compare-and-swap, no history, and callers' ``expected_revision`` stays valid."""
        name = validate_name(name)

        def op(snap: _Snapshot, now: datetime) -> dict[str, Any]:
            current = _existing(snap, name, None)
            old = snap.data["profiles"][name]
            meta = _with_key_after(dict(old.get("metadata", {})), "updated", "last_used", now)
            meta["use_count"] = current.use_count + 1
            return _with_profile(snap.data, name, {**old, "metadata": meta})

        return self._result(self._mutate(op), name)

    # -- machinery -------------------------------------------------------------------------------------------

    def _result(self, snap: _Snapshot, name: str) -> Profile:
        return copy.deepcopy(snap.profiles[name])

    def _now(self) -> datetime:
        now = self._clock()
        return now if now.tzinfo is not None else now.replace(tzinfo=UTC)

    def _read_raw(self) -> bytes | None:
        try:
            return self._path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ProfileStoreError(
                messages.PROFILE_STORE_UNREADABLE.format(path=self._path, error=exc.strerror or exc)
            ) from exc

    def _snapshot_of(self, raw: bytes | None) -> _Snapshot:
        cached = self._cache
        if cached is not None and cached.raw == raw:
            return cached
        if raw is None:
            return _EMPTY
        try:
            data = tomllib.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise ProfileStoreError(
                messages.PROFILE_STORE_CORRUPT.format(path=self._path, error=f"not UTF-8 text: {exc.reason}")
            ) from exc
        except tomllib.TOMLDecodeError as exc:
            raise ProfileStoreError(
                messages.PROFILE_STORE_CORRUPT.format(path=self._path, error=exc)
            ) from exc
        return _Snapshot(raw, data, _profiles_from_document(data, self._path, _known(cached)))

    def _current(self) -> _Snapshot:
        snap = self._snapshot_of(self._read_raw())
        self._cache = snap
        return snap

    def _mutate(self, op: Op) -> _Snapshot:
        """Run one locked read-apply-write cycle; returns the published snapshot."""
        with self._thread_lock:
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                self._file_lock.acquire(timeout=self._lock_timeout, poll_interval=_LOCK_POLL_S)
            except filelock.Timeout as exc:
                raise SerialMcpError(
                    "profile_store_io",
                    messages.PROFILE_STORE_LOCK_TIMEOUT.format(
                        seconds=self._lock_timeout, lock=self._lock_path
                    ),
                ) from exc
            except OSError as exc:
                raise SerialMcpError(
                    "profile_store_io", messages.PROFILE_STORE_WRITE_FAILED.format(path=self._path, error=exc)
                ) from exc
            try:
                snap = self._current()
                new_data = op(snap, self._now())
                if new_data is None:
                    return snap
                if "schema_version" not in new_data:
                    new_data = {"schema_version": SCHEMA_VERSION, **new_data}
                text = self._render(snap, new_data)
                try:
                    profiles = _profiles_from_document(new_data, self._path, _known(snap))
                except ProfileStoreError as exc:  # a bug here must never reach the disk
                    raise self._verify_failed(exc.message) from exc
                raw = text.encode("utf-8")
                try:
                    self._remove_stale_temps()
                    self._write_atomic(raw)
                except OSError as exc:
                    raise SerialMcpError(
                        "profile_store_io",
                        messages.PROFILE_STORE_WRITE_FAILED.format(
                            path=self._path, error=exc.strerror or exc
                        ),
                    ) from exc
                published = _Snapshot(raw, new_data, profiles)
                self._cache = published
                return published
            finally:
                self._file_lock.release()

    def _verify_failed(self, error: object) -> SerialMcpError:
        return SerialMcpError(
            "profile_store_io", messages.PROFILE_STORE_VERIFY_FAILED.format(path=self._path, error=error)
        )

    def _render(self, snap: _Snapshot, new_data: dict[str, Any]) -> str:
        """The new file text: re-rendered when the file is canonical, else edited with tomlkit."""
        if snap.raw is None:
            return messages.PROFILE_FILE_HEADER + _render_body(new_data)
        text = snap.raw.decode("utf-8-sig")  # a BOM from an editor is dropped
        header, body = _split_header(text)
        if body == _render_body(snap.data):
            return header + _render_body(new_data)
        try:
            doc = tomlkit.parse(text)
        except TOMLKitError as exc:
            raise ProfileStoreError(
                messages.PROFILE_STORE_CORRUPT.format(path=self._path, error=exc)
            ) from exc
        _sync(doc, snap.data, new_data, 1)
        out = doc.as_string()
        try:
            written = tomllib.loads(out)
        except tomllib.TOMLDecodeError as exc:
            raise self._verify_failed(exc) from exc
        if not _same(written, new_data):
            raise self._verify_failed("the edited document reads back differently")
        return out

    def _remove_stale_temps(self) -> None:
        """Delete temp files a crashed writer left behind (safe: we hold the file lock)."""
        prefix, suffix = f".{self._path.name}.", ".tmp"
        with os.scandir(self._path.parent) as entries:
            for entry in entries:
                if entry.name.startswith(prefix) and entry.name.endswith(suffix):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)

    def _write_atomic(self, raw: bytes) -> None:
        """Temp file in the same directory, fsync, ``os.replace``, fsync the directory."""
        directory = self._path.parent
        fd, tmp = tempfile.mkstemp(prefix=f".{self._path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileNotFoundError):
                os.chmod(tmp, stat.S_IMODE(os.stat(self._path).st_mode))
            _replace(tmp, self._path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(directory)


def _replace(src: str, dst: Path) -> None:
    """``os.replace``; on Windows a reader holding the file open makes it fail briefly, so retry."""
    attempts = 20 if sys.platform == "win32" else 1
    for attempt in range(attempts):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (POSIX; Windows has no directory fsync)."""
    if sys.platform == "win32":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


# --- profile data (what one [profiles.<name>] group holds) -------------------------------------------------


def _existing(snap: _Snapshot, name: str, expected: int | None) -> Profile:
    current = snap.profiles.get(name)
    if current is None:
        if expected is not None:
            raise _conflict(name, None, expected)
        known = ", ".join(sorted(snap.profiles)) or "none"
        raise SerialMcpError(
            "profile_not_found", messages.PROFILE_NOT_FOUND.format(name=name, known=known), profile=name
        )
    _check_cas(current, expected)
    return current


def _check_cas(current: Profile, expected: int | None) -> None:
    if expected is not None and expected != current.revision:
        raise _conflict(current.name, current.revision, expected)


def _conflict(name: str, current: int | None, expected: int) -> SerialMcpError:
    if current is None:
        text = messages.PROFILE_REVISION_GONE.format(name=name, expected=expected)
    else:
        text = messages.PROFILE_REVISION_CONFLICT.format(name=name, current=current, expected=expected)
    return SerialMcpError(
        "revision_conflict", text, profile=name, current_revision=current, expected_revision=expected
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


def _fresh_profile(
    selector: dict[str, str], defaults: dict[str, Any], now: datetime, generated: bool
) -> dict[str, Any]:
    return {
        "selector": dict(selector),
        "defaults": copy.deepcopy(defaults),
        "metadata": _metadata(1, now, now, None, 0, generated),
    }


def _next_revision(
    snap: _Snapshot,
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


def _with_key_after(table: dict[str, Any], anchor: str, key: str, value: Any) -> dict[str, Any]:
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


def _with_profile(data: dict[str, Any], name: str, pdata: dict[str, Any] | None) -> dict[str, Any]:
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
