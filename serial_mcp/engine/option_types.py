"""The value types of operation options, each with its one description (from ``messages.py``).

An option's type says what the wire, the Python API and ``mypy`` accept, and its ``Field``
description is what the MCP schema shows. Numbers are strict: a JSON boolean (or a string) where a
number is expected is ``invalid_argument``, never silently 1 or 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Literal, Required

from pydantic import (
    ConfigDict,
    Field,
    Strict,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
)
from pydantic import with_config as _with_config
from typing_extensions import TypedDict  # pydantic validates it on Python 3.11 too

from serial_mcp import messages
from serial_mcp.core.encoding import Encoding
from serial_mcp.core.lend_watch import DEFAULT_LEND_MS
from serial_mcp.core.match import Matcher, MatchMode
from serial_mcp.core.pace import PaceArg, PaceSpec
from serial_mcp.core.reconnect import ReconnectArg, ReconnectSpec
from serial_mcp.core.screen import MAX_COLS, MAX_ROWS, MIN_SIZE
from serial_mcp.core.unknown_keys import Keyed, keyed, reject_unknown_keys
from serial_mcp.engine import lab_reset
from serial_mcp.engine.lab_reset import ResetSpec as ResetSpec  # declared beside its check
from serial_mcp.errors import InvalidArgument, Short
from serial_mcp.serial.reader import MAX_TIMEOUT_MS
from serial_mcp.serial.responder import MAX_TIMES
from serial_mcp.serial.responder import RuleSpec as RuleSpec  # declared beside the code that uses it

Int = Annotated[int, Strict()]
Number = Annotated[float, Strict()]

Enc = Literal["utf8", "hex", "base64"]
FramesView = Literal["parsed", "raw", "both"]
FlushTarget = Literal["input", "output", "both"]
FlowControlMode = Literal["none", "software", "hardware"]
RecordAction = Literal["start", "stop", "status"]
LendAction = Literal["release", "reclaim", "status"]
Share = Literal["read", "write"]
Direction = Literal["send", "receive"]
XProtocol = Literal["xmodem", "xmodem_crc", "xmodem_1k", "ymodem"]
ByteOrder = Literal["big", "little"]


RULE_CHECK = keyed(
    RuleSpec,
    "respond",
    messages.RESPOND_BAD,
    wrong=messages.RESPOND_TIMES.format(max=MAX_TIMES),
    typed=messages.RESPOND_BAD,
)
RuleArg = Annotated[RuleSpec | None, RULE_CHECK]
MAX_STANDING = 16
TERMINAL: Literal["terminal"] = "terminal"  # the shorthand rule: answer ESC[6n with ESC[24;80R
Standing = list[RuleSpec | Literal["terminal"]]
_RULE: TypeAdapter[RuleSpec] | None = None


def standing_rules(value: object) -> Standing:
    """Up to ``MAX_STANDING`` rules (one rule alone is taken as a list of one), each a ``RuleSpec``
    or ``"terminal"`` (checked with the rule's texts): a connection's standing rules, as ``open``
    and ``configure`` take them."""
    global _RULE
    rules = [value] if isinstance(value, Mapping) else value
    if not isinstance(rules, list) or len(rules) > MAX_STANDING:
        raise InvalidArgument(messages.RESPOND_LIST_BAD.format(max=MAX_STANDING))
    _RULE = _RULE or TypeAdapter(Annotated[RuleSpec, RULE_CHECK])  # built on first use: start-up stays light
    return [TERMINAL if rule == TERMINAL else _RULE.validate_python(rule) for rule in rules]


# --- issue 28.5: a dialog step's fields, typed -------------------------------------------------------
StepMs = Annotated[int, Strict(), Field(ge=0, le=MAX_TIMEOUT_MS)]
MAX_STEPS = 32


class StepSpec(TypedDict, total=False):
    """One object of ``transact(steps=[...])``, each field typed: every step is checked before the
    first byte goes out. The published schema keeps ``steps`` a list of objects (``P_STEPS``)."""

    send: str | None
    keys: list[str] | None
    encoding: Enc | None
    expect: str | dict[str, object] | None  # a match, as transact's
    timeout_ms: StepMs | None
    idle_ms: StepMs | None
    respond: RuleArg
    micropython: str | None
    interrupt: Annotated[bool, Strict()] | None
    reply: str | None  # issue 26: as transact's reply, for this step's expect


STEP_KEYS = tuple(StepSpec.__annotations__)


def _check_steps(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    """1 to ``MAX_STEPS`` objects; a step's unknown key named with the closest one, its faults with
    its index (``step 1: timeout_ms: …``)."""
    if value is None:
        return None
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_STEPS:
        raise InvalidArgument(messages.STEPS_BAD.format(max=MAX_STEPS))
    for i, step in enumerate(value):
        if not isinstance(step, Mapping):
            raise InvalidArgument(messages.STEP_BAD.format(i=i, problem="not an object"))
        reject_unknown_keys(step, STEP_KEYS, f"steps[{i}]")
    try:
        return handler(value)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        index, *where = err["loc"]
        problem = f"{'.'.join(map(str, where))}: {err['msg']} (got {Short(err['input'])})"
        raise InvalidArgument(messages.STEP_BAD.format(i=index, problem=problem)) from None


# --- reading -----------------------------------------------------------------------------------
# The nested read options are typed (issue 41.1): the wire, the Python API and mypy see their keys.
# A value their type refuses gets the contract's own text (``checked``), not pydantic's report.
_CLOSED = ConfigDict(extra="forbid")


def checked(text: str | Callable[[object], None], **fields: object) -> WrapValidator:
    """A type's validation, its failure said as ``text`` (formatted with ``fields`` and ``value``:
    what was given), or by ``text(value)``, which raises the contract's own error for each fault
    before the type is asked."""

    def validate(value: object, handler: ValidatorFunctionWrapHandler) -> object:
        if callable(text):
            if value is not None:
                text(value)
            return handler(value)
        try:
            return handler(value)
        except ValidationError:
            raise InvalidArgument(text.format(value=Short(value), **fields)) from None

    return WrapValidator(validate)


@_with_config(_CLOSED)
class MatchSpec(TypedDict, total=False):
    """``match`` as an object: what to wait for and how to look for it."""

    pattern: Required[str]
    mode: MatchMode
    pattern_encoding: Encoding
    ansi: Literal["keep", "ignore"]


@_with_config(_CLOSED)
class ScreenSize(TypedDict, total=False):
    """``screen``: the terminal a full-screen TUI is drawn on (80 × 24 unless given)."""

    cols: Annotated[int, Strict(), Field(ge=MIN_SIZE, le=MAX_COLS)]
    rows: Annotated[int, Strict(), Field(ge=MIN_SIZE, le=MAX_ROWS)]


def _match_texts(value: object) -> None:
    Matcher.from_spec(value)  # its faults in the contract's words (cached: compiled once a pattern)


MAX_SUMMARY_FIELDS = 8
SummaryField = Annotated[str, Field(min_length=1, max_length=64)]


@_with_config(_CLOSED)
class FromEvent(TypedDict):
    """``from: {"event": SEQ}``: the bytes from where that event began."""

    event: Annotated[int, Strict(), Field(gt=0)]


From = Annotated[
    Annotated[int, Strict(), Field(ge=0)]
    | Literal["cursor", "now", "buffer_start", "last_boot"]
    | Annotated[str, Field(pattern=r"^[0-9]+$")]  # an offset as a string of digits
    | FromEvent
    | None,
    Field(description=messages.P_FROM),
    checked(messages.READ_BAD_FROM),
    WithJsonSchema({"type": ["integer", "string", "object"]}),
]
Loose = dict[str, object] | None  # what a tool publishes for an object its options model checks


def _as_given(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    """An object passed on as given: the code that uses it judges its keys and values, with its texts."""
    return value if isinstance(value, dict) else handler(value)


AS_GIVEN = Keyed(_as_given, wire=Loose)


class TxFramingSpec(TypedDict, total=False):
    """``tx_framing``: how a write is framed. Which keys a ``type`` takes, and the forms of their
    values, are checked by the framing code (``core.framing.config``) with its own texts."""

    type: Required[str]
    ending: str
    delimiter: str
    encoding: Enc
    checksum: dict[str, object]
    prefix_size: int
    endianness: ByteOrder
    header_offset: int
    max_length: int
    start: str | list[str]
    end: str
    sync: str | list[str]
    length: int | dict[str, object]
    header_length: int


class RxFramingSpec(TxFramingSpec, total=False):
    """``rx_framing``: how the bytes read are cut into frames (checked as ``tx_framing`` is)."""

    include_terminators: bool
    skip_empty: bool
    reply_to: str  # modbus_rtu: the request (hex) whose reply is expected


class ParserSpec(TypedDict, total=False):
    """``rx_parser``: what each frame is parsed as (checked by ``core.parsers.config``)."""

    type: Required[str]
    validate: bool
    prompt: str | None  # shell_prompt
    print_filter: str | None  # esp_log


Cursor = Annotated[str | None, Field(description=messages.P_CURSOR)]
Timeout = Annotated[Int | None, Field(description=messages.P_TIMEOUT_MS)]
IdleMs = Annotated[Int | None, Field(description=messages.P_IDLE_MS)]
MaxBytes = Annotated[Int | None, Field(description=messages.P_MAX_BYTES)]
MaxFrames = Annotated[Int | None, Field(description=messages.P_MAX_FRAMES)]
# Published as short as before (tools/list pays for every byte): the description names the keys.
# A string is checked where it is compiled (core/match.py), as the object's keys are here first.
Match = Annotated[
    str | Annotated[MatchSpec, checked(_match_texts)] | None,
    Field(description=messages.P_MATCH),
    WithJsonSchema({"type": ["object", "string"]}),
]
EncOut = Annotated[Enc | None, Field(description=messages.P_ENCODING_OUT)]
Protocol = Annotated[str | None, Field(description=messages.P_PROTOCOL)]
RxFraming = Annotated[RxFramingSpec | None, AS_GIVEN, Field(description=messages.P_RX_FRAMING)]
RxParser = Annotated[
    ParserSpec | None, AS_GIVEN, Field(description=f"{messages.P_RX_PARSER} {messages.P_VALIDATE_DEFAULT}")
]
Respond = Annotated[RuleArg, Field(description=messages.P_RESPOND)]
StripAnsi = Annotated[bool, Field(description=messages.P_STRIP_ANSI)]
Screen = Annotated[
    ScreenSize | None,
    Field(description=messages.P_SCREEN),
    checked(messages.SCREEN_SIZE, cols=MAX_COLS, rows=MAX_ROWS, min=MIN_SIZE),
    WithJsonSchema({"additionalProperties": {"type": "integer"}, "type": "object"}),
]
Frames = Annotated[FramesView | None, Field(description=messages.P_FRAMES_VIEW)]
EventKind = Literal["crash", "exception", "reset", "boot", "boot_loop", "stage"]
Until = Annotated[list[EventKind] | None, Field(description=messages.P_UNTIL)]  # issue 24
# issue 26: summaries, replies that return only the match, lean results
Summary = Annotated[bool, Field(description=messages.P_SUMMARY)]
To = Annotated[Int | None, Field(description=messages.P_TO, ge=0)]
SummaryFields = Annotated[
    list[SummaryField] | None,
    Field(description=messages.P_FIELDS, max_length=MAX_SUMMARY_FIELDS),
    checked(messages.READ_SUMMARY_FIELDS, max=MAX_SUMMARY_FIELDS),
    WithJsonSchema({"items": {"type": "string"}, "type": "array"}),
]
Reply = Annotated[str | None, Field(description=messages.P_REPLY)]
Verbose = Annotated[bool, Field(description=messages.P_VERBOSE)]


# --- writing -----------------------------------------------------------------------------------
Data = Annotated[str, Field(description=messages.P_DATA)]
EncIn = Annotated[Enc | None, Field(description=messages.P_ENCODING_IN)]
EncBoth = Annotated[Enc | None, Field(description=messages.P_ENCODING_BOTH)]
ReadEncoding = Annotated[Enc | None, Field(description=messages.P_READ_ENCODING)]
TxFraming = Annotated[TxFramingSpec | None, AS_GIVEN, Field(description=messages.P_TX_FRAMING)]
Pace = Annotated[PaceArg, Field(description=messages.P_PACE)]
Keys = Annotated[list[str] | None, Field(description=messages.P_KEYS)]
WriteTimeout = Annotated[Int | None, Field(description=messages.P_WRITE_TIMEOUT_MS)]
WriteStall = Annotated[Int | None, Field(description=messages.P_WRITE_STALL_MS)]  # issue 28.6
ReadEcho = Annotated[bool, Field(description=messages.P_READ_ECHO)]
Steps = Annotated[
    list[StepSpec] | None,
    Keyed(_check_steps, wire=list[dict[str, object]] | None),
    Field(description=messages.P_STEPS),
]
Reset = Annotated[
    ResetSpec | None,
    Keyed(lambda v, _: lab_reset.check(v), wire=Loose),
    Field(description=f"{messages.P_RESET}{messages.P_RESET_TOUCH} {messages.P_RESET_LAB}"),
]
BootSend = Annotated[str | None, Field(description=messages.P_BOOT_SEND)]
FlushWhat = Annotated[FlushTarget, Field(description=messages.P_FLUSH_TARGET)]

# --- the port ----------------------------------------------------------------------------------
Port = Annotated[str, Field(description=messages.P_PORT)]
BaudRate = Int | None
DataBits = Literal[5, 6, 7, 8] | None
Parity = Annotated[Literal["none", "even", "odd", "mark", "space"] | None, Field()]
StopBits = Number | None
FlowControl = Annotated[FlowControlMode | None, Field()]
RxBuffer = Annotated[Int | None, Field(description=messages.P_RX_BUFFER)]
Reconnect = Annotated[ReconnectArg, Field(description=messages.P_RECONNECT)]
RecordOnOpen = Annotated[str | None, Field(description=messages.P_RECORD_OPEN)]
ProfileMode = Annotated[str, Field(description=messages.P_PROFILE_MODE)]
Mirror = Annotated[str | None, Field(description=messages.P_MIRROR_KINDS)]
StrictBool = Annotated[bool, Strict()]
Delay = Annotated[float, Strict(), Field(ge=0, le=1)] | None  # seconds


class Rs485Spec(TypedDict, total=False):
    """RS-485 transceiver control, as pyserial's ``RS485Settings`` takes it."""

    rts_level_for_tx: StrictBool
    rts_level_for_rx: StrictBool
    loopback: StrictBool
    delay_before_tx: Delay
    delay_before_rx: Delay


RS485_BAD = messages.BAD_RS485.format(allowed=", ".join(Rs485Spec.__annotations__))
Rs485 = Annotated[Rs485Spec | None, keyed(Rs485Spec, "rs485", RS485_BAD), Field(description=messages.P_RS485)]
LowLatency = Annotated[bool | None, Field(description=messages.P_LOW_LATENCY)]
ShareMode = Annotated[Share | None, Field(description=messages.P_SHARE)]
StandingRules = Annotated[
    Standing | None,
    Keyed(lambda v, _: None if v is None else standing_rules(v), wire=list[dict[str, object] | str] | None),
    Field(description=messages.P_RESPOND_OPEN),
]
Dtr = Annotated[bool | None, Field(description=messages.P_DTR)]
Force = Annotated[bool, Strict()]  # issue 23.1: act although an RFC 2217 client holds the port (port_lent)
Rts = Annotated[bool | None, Field(description=messages.P_RTS)]
Elf = Annotated[str | None, Field(description=messages.P_ELF)]  # issue 24
BreakMs = Annotated[Int, Field(description=messages.P_BREAK_MS)]
Flow = Annotated[FlowControlMode, Field(description=messages.P_FLOW)]

# --- profiles, logs, captures, console, utilities ------------------------------------------------
ProfileName = Annotated[str, Field(description=messages.P_PROFILE)]
OptionalProfile = Annotated[str | None, Field(description=messages.P_PROFILE)]
OptionalConnection = Annotated[str | None, Field(description=messages.P_CONNECTION_ID)]
Revision = Annotated[Int | None, Field(description=messages.P_EXPECTED_REVISION)]
ToRevision = Annotated[Int, Field(description=messages.P_TO_REVISION)]
Overwrite = Annotated[bool, Field(description=messages.P_OVERWRITE)]


class SettingsSpec(TypedDict, total=False):
    """``configure``'s ``defaults``: a profile's settings, or a live connection's (the UART
    settings, ``respond``, ``elf``, ``mirror``). Typed for ``mypy``; the values are checked by the
    profile and settings code with their own texts (``invalid_config`` …), not here."""

    baud_rate: int
    data_bits: int
    parity: str
    stop_bits: float
    flow_control: str
    protocol: str | None
    rx_framing: RxFramingSpec | None
    tx_framing: TxFramingSpec | None
    rx_parser: ParserSpec | None
    rx_buffer_size: int
    reconnect: bool | ReconnectSpec | None
    pace: PaceSpec | None
    rs485: Rs485Spec | None
    low_latency: bool
    respond: Standing
    elf: str | None
    mirror: str | None


Defaults = Annotated[
    SettingsSpec, Keyed(_as_given, wire=dict[str, object]), Field(description=messages.P_DEFAULTS)
]
LogLimit = Annotated[Int, Field(description=messages.P_LOG_LIMIT)]
LogSince = Annotated[Int | None, Field(description=messages.P_LOG_SINCE)]
LogPayloads = Annotated[bool, Field(description=messages.P_LOG_PAYLOADS)]
LogKinds = Annotated[list[str] | None, Field(description=messages.P_LOG_KINDS)]
CaptureName = Annotated[str, Field(description=messages.P_CAPTURE_NAME)]
OptionalCaptureName = Annotated[str | None, Field(description=messages.P_CAPTURE_NAME)]
Note = Annotated[str | None, Field(description=messages.P_NOTE)]
Action = Annotated[RecordAction, Field(description=messages.P_RECORD_ACTION)]
RecordDuration = Annotated[Int | None, Field(description=messages.P_RECORD_DURATION)]
RecordFrom = Annotated[Int | str | None, Field(description=messages.P_RECORD_FROM)]
Candidates = Annotated[list[Int] | None, Field(description=messages.P_CANDIDATES)]
WindowMs = Annotated[Int, Field(description=messages.P_WINDOW_MS)]
IdentifyPorts = Annotated[list[str] | None, Field(max_length=16, description=messages.P_IDENTIFY_PORTS)]
ListenMs = Annotated[Int, Field(ge=100, le=10_000, description=messages.P_LISTEN_MS)]
IdentifyProbe = Annotated[bool, Strict(), Field(description=messages.P_IDENTIFY_PROBE)]
Probe = Annotated[str | None, Field(description=messages.P_PROBE)]
TransferDirection = Annotated[Direction, Field(description=messages.P_DIRECTION)]
TransferProtocol = Annotated[XProtocol, Field(description=messages.P_XPROTOCOL)]
TransferData = Annotated[str | None, Field(description=messages.P_XDATA)]
TransferFilename = Annotated[str | None, Field(description=messages.P_XFILENAME)]
ChecksumData = Annotated[str, Field(description=messages.P_CHECKSUM_DATA)]
Algorithm = Annotated[str, Field(description=messages.P_ALGORITHM)]
ChecksumByteOrder = Annotated[ByteOrder | None, Field(description=messages.P_BYTE_ORDER)]

# --- issue 23.2: lending the port --------------------------------------------------------------
LendWhat = Annotated[LendAction, Field(description=messages.P_LEND_ACTION)]
LendTimeout = Annotated[
    Int | None,
    Field(description=messages.P_LEND_TIMEOUT.format(default=DEFAULT_LEND_MS)),
]
