"""Every operation's options, declared once: the engine takes them, the MCP tools' input schemas
and the Python API's keywords are made from them.

One frozen, validated model per operation (pydantic dataclasses: typed, strict numbers, unknown
keywords refused). A new option is one field here plus its description in ``messages.py``:

- the engine operation receives it as an attribute of its options object;
- the MCP tool gets it as an argument (``mcp/tools.py`` builds each tool's signature from these
  fields, so its input schema follows);
- ``EngineConnection`` / ``Engine`` get it as a typed keyword (their methods take the options'
  constructor's parameters, so ``mypy`` rejects ``conn.transact("AT", mtch="OK")`` and
  ``timeout_ms="fast"``), and ``SyncConnection`` / ``SyncEngine`` follow from those.

Options that several operations share are declared in one base and inherited: the read window
(how a read stops and decodes) by ``read``, ``transact`` and ``capture_boot``; the serial settings
by ``open`` and ``reconfigure``. An option named after a Python keyword is spelt with a trailing
underscore (``from_``) and published under its keyword (``from``).

A nested option (``pace``, ``reconnect``, ``respond``, ``steps``, ``rs485``, ``reset``, the framings
…) is a ``TypedDict`` declared once (``option_types.py``, or beside the code that uses it: ``core/
pace.py``, ``core/reconnect.py``, ``serial/responder.py``, ``engine/lab_reset.py``) with its fields'
types and ranges: ``mypy`` checks a dict literal against it in the Python API, and its validator
(``core.unknown_keys.keyed``) refuses a bad one as the options are built, with the option's own
texts (an unknown key named with the closest known one); the code behind trusts it. A framing or
parser object is checked by the codec code (profiles and captures hand it the same objects). Its
tool publishes a plain object (the validator's ``wire`` type) with the option's description, which
keeps ``tools/list`` small. No option is ``Any`` (tests/unit/test_nested_options.py).

A field's description is published once, on the operation that owns it: the read window's fields
are described on ``read`` and appear without a description on ``transact`` and ``capture_boot``
(their tool descriptions say "read options as in read"), which keeps ``tools/list`` small.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass

from serial_mcp import messages
from serial_mcp.engine import option_types as t
from serial_mcp.errors import InvalidArgument, Short

CONFIG = ConfigDict(extra="forbid", defer_build=True)
T = TypeVar("T")
KEYWORD_NAMES = {"from_": "from"}  # an option spelt with a trailing underscore, and its wire name


def wire_name(field: str) -> str:
    """The name an option has in a tool call (``from_`` → ``from``)."""
    return KEYWORD_NAMES.get(field, field)


_NAMES: dict[type[Any], tuple[tuple[str, ...], frozenset[str]]] = {}


def names(model: type[Any]) -> tuple[str, ...]:
    """The options of ``model`` as the Python API spells them (worked out once a class)."""
    return _names(model)[0]


def _names(model: type[Any]) -> tuple[tuple[str, ...], frozenset[str]]:
    known = _NAMES.get(model)
    if known is None:
        listed = tuple(f.name for f in dataclasses.fields(model))
        known = _NAMES[model] = (listed, frozenset(listed))
    return known


def check_names(model: type[Any], given: Mapping[str, object], operation: str) -> None:
    """Refuse an option ``model`` does not have, naming the closest one (``baud_rat`` →
    ``baud_rate``): a typo is never dropped in silence, in the Python API as in the tools."""
    known, known_set = _names(model)
    if all(k in known_set for k in given):  # every call's path: one set lookup a key
        return
    unknown = sorted(k for k in given if k not in known_set)
    key = unknown[0]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.5)
    hint = messages.DID_YOU_MEAN.format(name=close[0]) if close else ""
    raise InvalidArgument(
        messages.UNKNOWN_ARGUMENT.format(
            key=key[:80], tool=operation, hint=hint, allowed=", ".join(sorted(known))
        )
    )


def invalid(exc: ValidationError, where: str = "") -> InvalidArgument:
    """pydantic's report as one line per field, ``field: what is wrong (got X)``."""
    items = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err.get("loc", ()) if part != "__root__")
        loc = ".".join(filter(None, (where, wire_name(loc) if loc else "")))
        got = f" (got {Short(err['input'])})" if "input" in err and err.get("type") != "missing" else ""
        items.append(f"{loc or 'arguments'}: {err.get('msg', 'invalid')}{got}")
    return InvalidArgument(messages.ARGUMENT_REJECTED.format(detail="; ".join(items)))


def build(model: Callable[..., T], operation: str, /, *args: object, **values: object) -> T:
    """``model(*args, **values)`` with every fault an ``invalid_argument`` a caller can act on."""
    check_names(model, values, operation)  # type: ignore[arg-type]  # model is an options class
    try:
        return model(*args, **values)
    except ValidationError as exc:
        raise invalid(exc) from None
    except TypeError as exc:  # a positional argument too many, or one given twice
        raise InvalidArgument(messages.ARGUMENT_REJECTED.format(detail=str(exc))) from None


def derive(base: T, where: str, **changes: object) -> T:
    """``base`` with ``changes`` (a dialog step's own timeout, say), validated like a call's."""
    try:
        return dataclasses.replace(base, **changes)  # type: ignore[type-var]
    except ValidationError as exc:
        raise invalid(exc, where) from None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class NoOptions:
    """An operation that takes nothing but its target."""

    described_elsewhere: ClassVar[frozenset[str]] = frozenset()


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class Forcing(NoOptions):
    """An operation that writes to the port or changes its settings: one a port lent to another program
    (an RFC 2217 client flashing it) refuses with ``port_lent`` unless ``force`` says to go ahead. Declared
    once here, so a new writing operation cannot forget it."""

    force: t.Force = False


# --- a question to a port: ``port`` instead of ``connection_id`` (issue 39) -------------------------
OnPortName = Annotated[str | None, Field(description=messages.P_ON_PORT)]


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class OnPort(NoOptions):
    """``read``, ``write``, ``transact``, ``capture_boot``: ``port`` instead of ``connection_id``: the
    caller's connection to it, or one opened as ``open`` opens it and held (``engine/held.py``);
    ``baud_rate`` (and the operation's ``protocol``) are the open's, the rest the port's profile's."""

    port: OnPortName = None
    baud_rate: t.BaudRate = None

    def named_port(self) -> bool:
        """Does the call name a port or its settings (else its connection_id is all)?"""
        return self.port is not None or self.baud_rate is not None


# --- reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class ReadWindow(OnPort):
    """How a read stops and what it decodes (shared by read, transact and capture_boot)."""

    timeout_ms: t.Timeout = None
    idle_ms: t.IdleMs = None
    max_bytes: t.MaxBytes = None
    match: t.Match = None
    protocol: t.Protocol = None
    rx_framing: t.RxFraming = None
    rx_parser: t.RxParser = None
    max_frames: t.MaxFrames = None
    until: t.Until = None
    reply: t.Reply = None  # issue 26: with match, return only the match (and N bytes before it)


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class CursorView(ReadWindow):
    """A read that consumes a cursor and shapes its text (read and transact)."""

    cursor: t.Cursor = None
    strip_ansi: t.StripAnsi = False
    frames: t.Frames = None


READ_WINDOW = frozenset(f.name for f in dataclasses.fields(CursorView)) - {"port", "baud_rate"}
# ``verbose`` (every field of the answer) is no option of the engine's: the tools of a read take it
# for the answer layer (``serial_mcp.answers``; mcp/tools.py), described on ``read``.
DESCRIBED_ON_READ = READ_WINDOW | {"verbose", "port"}
DESCRIBED_ON_WRITE = frozenset({"data", "tx_framing", "pace", "keys"})  # and not again on transact


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class ReadOptions(CursorView):
    """``read``: what arrived, from the caller's cursor unless ``from_`` says otherwise."""

    from_: t.From = None
    encoding: t.EncOut = None
    respond: t.Respond = None
    screen: t.Screen = None
    summary: t.Summary = False  # issue 26: the window's summary instead of its frames
    to: t.To = None
    fields: t.SummaryFields = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class WriteOptions(Forcing, OnPort):
    """``write``: bytes (decoded from ``encoding``, then framed) and/or named keys."""

    described_elsewhere: ClassVar[frozenset[str]] = frozenset({"port", "protocol"})  # as in read

    data: t.Data = dataclasses.field(default="", kw_only=False)
    encoding: t.EncIn = None
    protocol: t.Protocol = None
    tx_framing: t.TxFraming = None
    pace: t.Pace = None
    keys: t.Keys = None
    timeout_ms: t.WriteTimeout = None
    stall_ms: t.WriteStall = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class TransactOptions(CursorView, Forcing):
    """``transact``: write, then read the reply from a mark taken before the write; or, with
    ``steps``, a whole dialog."""

    # as in read, and as in write (D_TRANSACT says so)
    described_elsewhere: ClassVar[frozenset[str]] = DESCRIBED_ON_READ | DESCRIBED_ON_WRITE | {"respond"}

    data: t.Data = dataclasses.field(default="", kw_only=False)
    encoding: t.EncBoth = None
    read_encoding: t.ReadEncoding = None
    tx_framing: t.TxFraming = None
    pace: t.Pace = None
    respond: t.Respond = None
    read_echo: t.ReadEcho = False
    write_timeout_ms: t.WriteTimeout = None
    steps: t.Steps = None
    keys: t.Keys = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class CaptureBootOptions(ReadWindow, Forcing):
    """``capture_boot``: mark the RX edge, trigger the boot (reset lines and/or ``send``), read it."""

    described_elsewhere: ClassVar[frozenset[str]] = DESCRIBED_ON_READ | {"encoding", "respond"}  # as in read

    reset: t.Reset = None
    encoding: t.EncOut = None
    respond: t.Respond = None
    send: t.BootSend = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class FlushOptions(Forcing):
    target: t.FlushWhat = dataclasses.field(default="input", kw_only=False)
    cursor: t.Cursor = None


# --- the port and its lines ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class SerialFields(NoOptions):
    """UART settings (None = leave as is / the profile's or the default)."""

    baud_rate: t.BaudRate = None
    data_bits: t.DataBits = None
    parity: t.Parity = None
    stop_bits: t.StopBits = None
    flow_control: t.FlowControl = None

    def settings(self) -> dict[str, object]:
        """The UART settings given (None = unchanged)."""
        return {f: getattr(self, f) for f in SERIAL_FIELDS}


SERIAL_FIELDS = names(SerialFields)


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class OpenOptions(SerialFields):
    """``open``: the port's settings, defaults for its reads and writes, and what runs beside it."""

    # the connection's defaults for reads and writes: described on read and write (D_OPEN says so)
    described_elsewhere: ClassVar[frozenset[str]] = frozenset(
        {"rx_framing", "rx_parser", "tx_framing", "pace"}
    )
    port: t.Port = dataclasses.field(kw_only=False)
    rx_buffer_size: t.RxBuffer = None
    protocol: t.Protocol = None
    rx_framing: t.RxFraming = None
    tx_framing: t.TxFraming = None
    rx_parser: t.RxParser = None
    reconnect: t.Reconnect = None
    pace: t.Pace = None
    record: t.RecordOnOpen = None
    profile_mode: t.ProfileMode = "auto"
    mirror: t.Mirror = None
    rs485: t.Rs485 = None
    low_latency: t.LowLatency = None
    share: t.ShareMode = None
    respond: t.StandingRules = None
    elf: t.Elf = None

    def fields(self) -> dict[str, object]:
        """The settings a profile may supply (None = not given)."""
        return {k: getattr(self, k) for k in PROFILE_FIELDS}


PROFILE_FIELDS = (
    *SERIAL_FIELDS,
    "rx_buffer_size",
    "protocol",
    "rx_framing",
    "tx_framing",
    "rx_parser",
    "reconnect",
    "pace",
    "rs485",
    "low_latency",
)


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class ReconfigureOptions(SerialFields, Forcing):
    """``reconfigure``: change UART settings live (rolled back if the driver refuses)."""


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class LinesOptions(Forcing):
    dtr: t.Dtr = dataclasses.field(default=None, kw_only=False)
    rts: t.Rts = dataclasses.field(default=None, kw_only=False)


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class BreakOptions(Forcing):
    duration_ms: t.BreakMs = dataclasses.field(default=250, kw_only=False)


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class FlowOptions(Forcing):
    flow_control: t.Flow = dataclasses.field(kw_only=False)


# --- profiles ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class ProfileNameOptions(NoOptions):
    name: t.ProfileName = dataclasses.field(kw_only=False)


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class SaveProfileOptions(ProfileNameOptions):
    overwrite: t.Overwrite = False


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class DeleteProfileOptions(ProfileNameOptions):
    expected_revision: t.Revision = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class ConfigureOptions(NoOptions):
    defaults: t.Defaults = dataclasses.field(kw_only=False)
    profile: t.OptionalProfile = None
    connection_id: t.OptionalConnection = None
    expected_revision: t.Revision = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class RollbackOptions(DeleteProfileOptions):
    to_revision: t.ToRevision = dataclasses.field(kw_only=False)


# --- logs and captures ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class LogOptions(NoOptions):
    limit: t.LogLimit = 100
    since: t.LogSince = None
    payloads: t.LogPayloads = True
    encoding: t.EncOut = None
    kinds: t.LogKinds = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class ExportOptions(NoOptions):
    path: t.CaptureName = dataclasses.field(kw_only=False)
    note: t.Note = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class RecordOptions(NoOptions):
    action: t.Action = dataclasses.field(default="status", kw_only=False)
    path: t.OptionalCaptureName = None
    note: t.Note = None
    duration_ms: t.RecordDuration = None
    from_: t.RecordFrom = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class LendOptions(NoOptions):
    """``lend``: release the device node to another program, take it back, or look."""

    action: t.LendWhat = dataclasses.field(default="status", kw_only=False)
    timeout_ms: t.LendTimeout = None


# --- console and utilities -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class DetectBaudOptions(Forcing):
    candidates: t.Candidates = None
    window_ms: t.WindowMs = 600
    probe: t.Probe = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class IdentifyOptions(NoOptions):
    """``identify``: which ports, how long to listen, whether safe pokes may be sent."""

    ports: t.IdentifyPorts = None
    listen_ms: t.ListenMs = 1500
    probe: t.IdentifyProbe = False


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class TransferOptions(Forcing):
    direction: t.TransferDirection = dataclasses.field(kw_only=False)
    protocol: t.TransferProtocol = "xmodem_crc"
    data: t.TransferData = None
    encoding: t.EncIn = None
    filename: t.TransferFilename = None


@dataclass(frozen=True, kw_only=True, config=CONFIG)
class ChecksumOptions(NoOptions):
    data: t.ChecksumData = dataclasses.field(kw_only=False)
    algorithm: t.Algorithm = dataclasses.field(kw_only=False)
    encoding: t.EncIn = None
    byte_order: t.ChecksumByteOrder = None
