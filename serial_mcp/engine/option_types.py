"""The value types of operation options, each with its one description (from ``messages.py``).

An option's type says what the wire, the Python API and ``mypy`` accept, and its ``Field``
description is what the MCP schema shows. Numbers are strict: a JSON boolean (or a string) where a
number is expected is ``invalid_argument``, never silently 1 or 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Required

from pydantic import (
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
)
from pydantic import with_config as _with_config
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from serial_mcp import messages
from serial_mcp.core.encoding import Encoding
from serial_mcp.core.lend_watch import DEFAULT_LEND_MS
from serial_mcp.core.match import Matcher, MatchMode
from serial_mcp.core.screen import MAX_COLS, MAX_ROWS, MIN_SIZE
from serial_mcp.errors import InvalidArgument, Short

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
Rule = dict[str, Any] | str  # a standing respond rule, or "terminal"

# --- reading -----------------------------------------------------------------------------------
# The nested read options are typed (issue 41.1): the wire, the Python API and mypy see their keys.
# A value their type refuses gets the contract's own text (``checked``), not pydantic's report.
_CLOSED = ConfigDict(extra="forbid")


def checked(text: str | Callable[[Any], None], **fields: Any) -> WrapValidator:
    """A type's validation, its failure said as ``text`` (formatted with ``fields`` and ``value``:
    what was given), or by ``text(value)``, which raises the contract's own error for each fault
    before the type is asked."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
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


def _match_texts(value: Any) -> None:
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
RxFraming = Annotated[dict[str, Any] | None, Field(description=messages.P_RX_FRAMING)]
RxParser = Annotated[
    dict[str, Any] | None, Field(description=f"{messages.P_RX_PARSER} {messages.P_VALIDATE_DEFAULT}")
]
Respond = Annotated[dict[str, Any] | None, Field(description=messages.P_RESPOND)]
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
TxFraming = Annotated[dict[str, Any] | None, Field(description=messages.P_TX_FRAMING)]
Pace = Annotated[dict[str, Int] | None, Field(description=messages.P_PACE)]
Keys = Annotated[list[str] | None, Field(description=messages.P_KEYS)]
WriteTimeout = Annotated[Int | None, Field(description=messages.P_WRITE_TIMEOUT_MS)]
WriteStall = Annotated[Int | None, Field(description=messages.P_WRITE_STALL_MS)]  # issue 28.6
ReadEcho = Annotated[bool, Field(description=messages.P_READ_ECHO)]
Steps = Annotated[list[dict[str, Any]] | None, Field(description=messages.P_STEPS)]
Reset = Annotated[
    dict[str, Any] | None,
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
Reconnect = Annotated[bool | dict[str, Any] | None, Field(description=messages.P_RECONNECT)]
RecordOnOpen = Annotated[str | None, Field(description=messages.P_RECORD_OPEN)]
ProfileMode = Annotated[str, Field(description=messages.P_PROFILE_MODE)]
Mirror = Annotated[str | None, Field(description=messages.P_MIRROR_KINDS)]
Rs485 = Annotated[dict[str, Any] | None, Field(description=messages.P_RS485)]
LowLatency = Annotated[bool | None, Field(description=messages.P_LOW_LATENCY)]
ShareMode = Annotated[Share | None, Field(description=messages.P_SHARE)]
StandingRules = Annotated[list[Rule] | None, Field(description=messages.P_RESPOND_OPEN)]
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
Defaults = Annotated[dict[str, Any], Field(description=messages.P_DEFAULTS)]
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
