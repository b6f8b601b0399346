"""Device profiles as values: what a profile is, how its stored form is validated, and the rules
of the profiles document (schema version, known keys, bounded nesting). Pure: no files, no locks.

A profile remembers a device (``selector``) and how to talk to it (``defaults``), with a revision
number for compare-and-swap and up to ``HISTORY_LIMIT`` earlier revisions for rollback (those are
made in ``core.profile_revisions``). ``store.profiles`` keeps them in a TOML file.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from datetime import time as dtime
from typing import Any, Final

from serial_mcp import messages
from serial_mcp.core.identity import NAME_RE, validate_selector
from serial_mcp.core.pace import parse_pace
from serial_mcp.core.reconnect import parse_policy
from serial_mcp.core.ring import MAX_CAPACITY, MIN_CAPACITY
from serial_mcp.core.settings import SerialSettings, validate_settings
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.errors import ErrorCode, InvalidArgument, StorageError

SCHEMA_VERSION: Final = 1
HISTORY_LIMIT: Final = 5
#: How deeply lists and objects may nest inside one setting (rx_parser, pace, ...): far more than
#: any real configuration needs, and far less than what would exhaust the interpreter's stack.
MAX_NESTING: Final = 32

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

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_INT64 = (-(2**63), 2**63 - 1)


class ProfileStoreError(StorageError):
    """The profiles file cannot be used (unreadable, not TOML, invalid, newer schema).

    Code ``profile_store_invalid``; the message is one line and the file was not modified.
    At startup this is fatal: print the message and exit non-zero.
    """

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(ErrorCode.PROFILE_STORE_INVALID, message, **details)


# --- the profile value -------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Deep copy with date/times as ISO-8601 strings (everything else already JSON-shaped)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime | date | dtime):
        return iso_text(value)
    return value


def iso_text(value: datetime | date | dtime) -> str:
    """ISO-8601, with a UTC offset written ``Z``."""
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
            "updated": None if self.updated is None else iso_text(self.updated),
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
                "created": None if self.created is None else iso_text(self.created),
                "updated": None if self.updated is None else iso_text(self.updated),
                "last_used": None if self.last_used is None else iso_text(self.last_used),
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


def check_revision_arg(field: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(
            messages.PROFILE_BAD_FIELD.format(
                field=field, expected=messages.PROFILE_EXPECT_REVISION, value=value
            )
        )
    return value


def _storable(value: Any, field: str, depth: int = 0) -> Any:
    """A plain deep copy that TOML can hold: None entries of objects are dropped (TOML has no
    null); anything else TOML cannot store, or nested more than ``MAX_NESTING`` deep, is an
    InvalidArgument naming ``field``."""
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_NESTING:
        raise InvalidArgument(messages.PROFILE_TOO_DEEP.format(field=field, limit=MAX_NESTING))
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgument(messages.PROFILE_NOT_STORABLE.format(field=field, value=key))
            if item is not None:
                out[key] = _storable(item, f"{field}.{key}", depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_storable(item, f"{field}[{i}]", depth + 1) for i, item in enumerate(value)]
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


check_keys = reject_unknown_keys  # a profile's unknown key is said as an option's


def validate_defaults(raw: object, field: str = "defaults") -> dict[str, Any]:
    """Checked profile defaults, in canonical field order, None values dropped.

    The serial settings go through ``validate_settings`` (so parity ``N`` is stored as
    ``none``); reconnect and pace through their parsers; rx_buffer_size must fit the ring.
    ``rx_framing``, ``tx_framing`` and ``rx_parser`` only need to be objects: they are
    validated when a connection uses them.
    """
    if not isinstance(raw, Mapping):
        raise InvalidArgument(messages.PROFILE_NOT_OBJECT.format(field=field, value=raw))
    check_keys(raw, DEFAULT_FIELDS, field)
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


def profile_from_data(name: str, raw: object) -> Profile:
    """Validate one ``profiles.<name>`` table as read from the file (InvalidArgument if bad)."""
    validate_name(name)
    pdata = _table(raw, "profile")
    check_keys(pdata, _PROFILE_KEYS, "profile")
    if "selector" not in pdata:
        raise InvalidArgument(messages.PROFILE_MISSING.format(field="selector"))
    selector = validate_selector(pdata["selector"])
    defaults = validate_defaults(pdata.get("defaults", {}))
    meta = _table(pdata.get("metadata", {}), "metadata")
    check_keys(meta, _METADATA_KEYS, "metadata")
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
        check_keys(entry, _HISTORY_KEYS, where)
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


def profiles_from_document(
    data: Mapping[str, Any], path: object, known: Mapping[str, tuple[Any, Profile]] | None = None
) -> dict[str, Profile]:
    """Validate a whole document; ProfileStoreError (one line, naming ``path`` - the file, for
    the message - and the place) if unusable.

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
        check_keys(data, _TOP_KEYS, "the file")
        where = "profiles"
        profiles = _table(data.get("profiles", {}), "profiles")
        out: dict[str, Profile] = {}
        for name, raw in profiles.items():
            where = f"profiles.{toml_key(name)}"
            seen = known.get(name) if known else None
            reuse = seen is not None and same(seen[0], raw)
            out[name] = seen[1] if seen is not None and reuse else profile_from_data(name, raw)
        return out
    except InvalidArgument as exc:
        raise ProfileStoreError(
            messages.PROFILE_STORE_INVALID.format(path=path, where=where, error=exc.message), where=where
        ) from exc


# --- shared by validation and rendering ---------------------------------------------------------------


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_string(text: str) -> str:
    # JSON escapes are valid TOML basic-string escapes; TOML additionally forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def same(a: Any, b: Any) -> bool:
    """Structural equality that also compares types (``True`` is not ``1``, ``1.0`` is not ``1``)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)
