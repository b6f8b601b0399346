"""What a read asks for, where it starts and what ends it: ``build_read_request`` validates a read's
arguments (timeouts, limits, match, encoding, framing and parser) into a ``ReadRequest``; its start
against a connection (``resolve_start``, ``pin_event_start``), the stop tests every read loop shares
(``wait_or_stop``, ``until_cut``) and ``ReadOutcome``, what a read loop (``serial.reader``,
``serial.decoded_read``) gives back.

A read with ``until`` ends on the first event of those kinds that ends after its start, or that the
connection's event watch found while it ran (its bytes were read, by an earlier read, before it was
complete): at the end of that event's lines and their line end. ``reset`` also ends on a boot: a reset
nobody announced (a watchdog, a brownout, the button) only shows as the next boot (issue 24).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from serial_mcp import messages
from serial_mcp.core.cursors import DEFAULT_CURSOR
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.encoding import ENCODINGS
from serial_mcp.core.match import Matcher, Span
from serial_mcp.errors import InvalidArgument, Short
from serial_mcp.serial.reply_wait import REPLY_QUIET_MS, ReplyWatch

if TYPE_CHECKING:
    from serial_mcp.serial.connection import Connection

DEFAULT_TIMEOUT_MS = 1000
MAX_TIMEOUT_MS = 600_000
DEFAULT_IDLE_MS = 100
DEFAULT_MAX_BYTES = 65536
MAX_MAX_BYTES = 4 * 1024 * 1024

StopReason = Literal[
    "match",
    "final",
    "max_bytes",
    "max_frames",
    "idle",
    "timeout",
    "disconnected",
    "closed",
    "overrun",
    "framing_error",
    "event",
    "to",  # a summary reached its window's end (issue 26)
]
DEFAULT_MAX_FRAMES = 100
REJECTED_KEPT = 8  # bad frames a framed read names (their count stays exact in frames_dropped)
MAX_MAX_FRAMES = 10_000
FEED_CHUNK = 64 * 1024
DEFAULT_RX_FRAMING: dict[str, Any] = {"type": "line", "ending": "auto"}


@dataclass(frozen=True, slots=True)
class DecodeSpec:
    """Resolved RX framing + parser for a framed read; ``key`` identifies it for cursor state."""

    rx_framing: Any
    rx_parser: Any
    key: str

    def new_decoder(self, offset: int) -> StreamDecoder:
        return StreamDecoder(self.rx_framing, self.rx_parser, offset)

    @property
    def packet_frames(self) -> bool:
        """A request/reply packet protocol: a reply is one frame (``serial.reply_wait``)."""
        return _type_of(self.rx_framing) in PACKET_FRAMINGS

    @property
    def line_frames(self) -> bool:
        """Frames are lines without their line end (``type: line``)."""
        return _type_of(self.rx_framing) == "line"

    @property
    def final_aware(self) -> bool:
        """The parser knows what ends an exchange (AT result codes, grbl ok/error, a shell prompt,
        a REPL's ``>``): a read then ends on that final, not on a short silence."""
        return _type_of(self.rx_parser) in FINAL_AWARE_PARSERS

    def silence_s(self, baud_rate: int) -> float | None:
        """How long the line must be quiet before the decoder is told so (``StreamDecoder.silence``):
        Modbus RTU's 3.5 characters; a console's unterminated prompt once output pauses."""
        if _type_of(self.rx_framing) == "modbus_rtu":
            from serial_mcp.core.framing.modbus_rtu import silence_seconds

            return max(silence_seconds(baud_rate), MIN_SILENCE_S)
        if _type_of(self.rx_parser) == "shell_prompt":
            return PROMPT_QUIET_S
        return None


PACKET_FRAMINGS = frozenset({"slip", "cobs", "length_prefixed", "start_end", "binary"})
FINAL_AWARE_PARSERS = frozenset({"at_command", "grbl", "shell_prompt", "micropython", "modbus_rtu"})
PROMPT_QUIET_S = 0.05  # a prompt is the unterminated tail once the console has been quiet this long
MIN_SILENCE_S = 0.005  # USB adapters' latency timers blur shorter gaps


def _type_of(spec: Any) -> str | None:
    kind = spec.get("type") if isinstance(spec, dict) else None
    return kind if isinstance(kind, str) else None


def build_decode_spec(rx_framing: Any, rx_parser: Any) -> DecodeSpec | None:
    """Validate a framing/parser pair (building it once); None means a raw byte read."""
    if rx_framing is None and rx_parser is None:
        return None
    framing = DEFAULT_RX_FRAMING if rx_framing is None else rx_framing
    StreamDecoder(framing, rx_parser, 0)  # raises InvalidArgument with the exact field at fault
    return DecodeSpec(framing, rx_parser, json.dumps([framing, rx_parser], sort_keys=True, default=str))


class FromEvent(NamedTuple):
    """``from: {"event": SEQ}``: the offset of event ``seq`` of the connection's event watch (issue 38)."""

    seq: int


From = int | Literal["cursor", "now", "buffer_start", "last_boot"] | FromEvent
FROM_NAMES = ("cursor", "now", "buffer_start", "last_boot")


class ReadRequest(NamedTuple):
    """A validated read: where to start, when to stop, how to render."""

    from_: From = "cursor"
    cursor: str = DEFAULT_CURSOR
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    idle_ms: int | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    matcher: Matcher | None = None
    encoding: str = "utf8"
    decode: DecodeSpec | None = None
    max_frames: int = DEFAULT_MAX_FRAMES
    until: frozenset[str] | None = None  # event kinds that end the read (issue 24)
    summary: tuple[str, ...] | None = None  # a summary read (issue 26): the numeric fields named
    to: int | None = None  # a summary's window ends at this offset
    reply: int | None = None  # reply="match" (0) / "tail:N": return the match and N bytes before it
    frames_asked: bool = False  # max_frames was given: the read waits for that many frames
    sent: bytes | None = None  # a transact's payload: its reply is awaited (serial.reply_wait)

    @property
    def names_its_end(self) -> bool:
        """The call says what ends it: ``idle_ms``, ``match``, ``until``, ``max_frames`` or a parser
        that knows its final (AT result codes, grbl ok/error, a shell prompt, a REPL's ``>``)."""
        if self.idle_ms is not None or self.matcher is not None or self.until or self.frames_asked:
            return True
        return self.decode is not None and self.decode.final_aware

    @property
    def awaits_reply(self) -> bool:
        """A transact that named no end: it ends on the reply (``serial.reply_wait``), not on a pause."""
        return self.sent is not None and not self.names_its_end

    def reply_watch(self) -> ReplyWatch | None:
        """A new watch of the reply this read awaits (``awaits_reply``), else None."""
        return ReplyWatch(self.sent) if self.sent is not None and self.awaits_reply else None

    @property
    def effective_idle_ms(self) -> int | None:
        """Silence that ends a read: explicit, else none when the call says what ends it; a
        transact's reply gets a quiet long enough for a real device, a plain read a short one."""
        if self.names_its_end:
            return self.idle_ms
        return DEFAULT_IDLE_MS if self.sent is None else REPLY_QUIET_MS


def _is_int(value: object) -> bool:
    """A whole number, and not a boolean (``True`` is an ``int`` to Python, never a count or a time)."""
    return isinstance(value, int) and not isinstance(value, bool)


def build_read_request(
    *,
    from_: Any = "cursor",
    cursor: str | None = None,
    timeout_ms: int | None = None,
    idle_ms: int | None = None,
    max_bytes: int | None = None,
    match: Any = None,
    encoding: str | None = None,
    decode: DecodeSpec | None = None,
    max_frames: int | None = None,
    until: Any = None,
    summary: tuple[str, ...] | None = None,
    to: int | None = None,
    reply: int | None = None,
) -> ReadRequest:
    """Validate every read argument up front (``transact`` calls this before it writes anything)."""
    from_ = _from(from_)
    t = DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    if not _is_int(t) or not 0 <= t <= MAX_TIMEOUT_MS:
        raise InvalidArgument(messages.READ_BAD_TIMEOUT.format(value=Short(t), max=MAX_TIMEOUT_MS))
    if idle_ms is not None and (not _is_int(idle_ms) or not 1 <= idle_ms <= MAX_TIMEOUT_MS):
        raise InvalidArgument(messages.READ_BAD_IDLE.format(value=Short(idle_ms), max=MAX_TIMEOUT_MS))
    mb = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if not _is_int(mb) or not 1 <= mb <= MAX_MAX_BYTES:
        raise InvalidArgument(messages.READ_BAD_MAX_BYTES.format(value=Short(mb), max=MAX_MAX_BYTES))
    enc = encoding or "utf8"
    if enc not in ENCODINGS:
        raise InvalidArgument(
            messages.BAD_ENCODING.format(field="encoding", value=Short(enc), allowed=", ".join(ENCODINGS))
        )
    mf = DEFAULT_MAX_FRAMES if max_frames is None else max_frames
    if not _is_int(mf) or not 1 <= mf <= MAX_MAX_FRAMES:
        raise InvalidArgument(messages.READ_BAD_MAX_FRAMES.format(value=Short(mf), max=MAX_MAX_FRAMES))
    matcher = Matcher.from_spec(match) if match is not None else None
    if max_frames is not None and decode is None and summary is None:
        decode = build_decode_spec(DEFAULT_RX_FRAMING, None)  # frames asked of a raw stream: its lines
    if matcher is not None and decode is not None and decode.line_frames:
        matcher = matcher.for_lines()  # a line frame holds no line end: "OK\r\n" is looked for as "OK"
    kinds = _until_kinds(until)
    return ReadRequest(
        from_,
        cursor or DEFAULT_CURSOR,
        t,
        idle_ms,
        mb,
        matcher,
        enc,
        decode,
        mf,
        kinds,
        summary,
        to,
        reply,
        frames_asked=max_frames is not None,
    )


def _until_kinds(until: Any) -> frozenset[str] | None:
    """``until``'s event kinds, checked (the typed options check them too; this guards other callers)."""
    if until is None:
        return None
    from serial_mcp.core.events import KINDS  # the detector's package: loaded by the first port opened

    if isinstance(until, str) or not all(isinstance(k, str) and k in KINDS for k in until):
        raise InvalidArgument(messages.READ_BAD_UNTIL.format(value=Short(until), allowed=", ".join(KINDS)))
    kinds = set(until)
    if "reset" in kinds:  # a reset nobody announced (watchdog, brownout, the button) shows as the next boot
        kinds.add("boot")
    return frozenset(kinds) or None


def _from(value: Any) -> From:
    """``from``, checked: a name, an offset (a string of digits too) or ``{"event": SEQ}``."""
    if value is None:
        return "cursor"
    if isinstance(value, str) and value in FROM_NAMES:
        return value  # type: ignore[return-value]  # one of the Literal's names
    if _is_int(value) and value >= 0:
        return int(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if (
        isinstance(value, dict)
        and list(value) == ["event"]
        and _is_int(value["event"])
        and value["event"] > 0
    ):
        return FromEvent(value["event"])
    raise InvalidArgument(messages.READ_BAD_FROM.format(value=Short(value)))


class ReadOutcome(NamedTuple):
    """The raw result of a read; the MCP layer renders it."""

    from_offset: int
    next_offset: int
    bytes_lost: int
    stop_reason: StopReason
    buffered_remaining: int
    cursor: str | None  # the cursor that was advanced, if any
    data: bytes = b""  # a raw read's bytes
    match: Span | None = None  # relative to ``data``
    frames: list[DecodedFrame] | None = None  # framed reads only
    frame_times: list[float | None] | None = None  # arrival time of each frame's last byte
    frames_dropped: int | None = None
    bytes_skipped: int | None = None  # framed reads: bytes that went into no frame (garbage, resync)
    error: str | None = None
    match_frame: int | None = None  # index of the frame that matched
    summary: dict[str, Any] | None = None  # a summary read: the window's summary (core/summary.py)
    rejected: list[DecodedFrame] | None = None  # framed reads: the first bad frames validate dropped
    frames_skipped: int = 0  # a framed reply read: frames consumed before the ones returned
    frames_filtered: int = 0  # framed and summary reads: frames the parser's filter hid (esp_log)


# --- where a read starts ----------------------------------------------------------------------------
def resolve_start(conn: Connection, req: ReadRequest) -> int:
    """The absolute offset a read starts at (creates a named cursor on first use)."""
    if req.from_ == "cursor":
        with conn.thread_lock:
            return conn.rx.cursor(req.cursor).offset
    snap = conn.snapshot()
    if req.from_ == "now":
        return snap.end_offset
    if req.from_ == "buffer_start":
        return snap.start_offset
    assert isinstance(req.from_, int)
    if req.from_ > snap.end_offset:
        raise InvalidArgument(messages.READ_FROM_FUTURE.format(value=req.from_, end=snap.end_offset))
    return req.from_


async def pin_event_start(conn: Connection, req: ReadRequest) -> ReadRequest:
    """``req`` with ``from="last_boot"`` / ``{"event": N}`` (issue 38.3) replaced by that event's offset:
    the newest boot the event watch has seen, or event N (the watch numbers every event it finds and
    keeps the last ones). The watch catches up with the bytes already received first, so a boot
    printed just now is found. Other starts stay as they are."""
    where = req.from_
    if where != "last_boot" and not isinstance(where, FromEvent):
        return req
    await conn.events.settle(conn.rx_end())
    seen = conn.events.events()
    if isinstance(where, FromEvent):
        found = next((e for e in seen if e.seq == where.seq), None)
        if found is None:
            kept = f"{seen[0].seq}..{seen[-1].seq}" if seen else "none"
            raise InvalidArgument(messages.READ_FROM_NO_EVENT.format(seq=where.seq, kept=kept))
    else:
        found = next((e for e in reversed(seen) if e.event.kind == "boot"), None)
        if found is None:
            raise InvalidArgument(messages.READ_FROM_NO_BOOT.format(n=len(seen)))
    return req._replace(from_=found.event.offset)


# --- what ends it, and what it gives back -------------------------------------------------------------
async def wait_or_stop(
    conn: Connection,
    seen_end: int,
    deadline: float,
    idle: int | None,
    have: bool,
    wake_in: float | None = None,
) -> StopReason | None:
    """Nothing new past ``seen_end``: say why the read ends, or sleep until something changes
    (at most ``wake_in`` seconds: a silence the decoder must hear about)."""
    snap = conn.snapshot()
    if snap.end_offset > seen_end:
        return None  # more arrived while we worked
    if snap.state in ("closed", "disconnected"):
        return snap.state
    # "reconnecting": keep waiting; the timeout still holds and a reconnect wakes us
    wait = deadline - time.monotonic()
    if idle is not None and have and snap.last_rx_time is not None:
        quiet = time.time() - snap.last_rx_time
        if quiet * 1000 >= idle:
            return "idle"
        wait = min(wait, idle / 1000 - quiet)
    if wait <= 0:
        return "timeout"
    if wake_in is not None:
        wait = min(wait, max(wake_in, 0.001))
    await conn.wait_change(wait, snap.end_offset)
    return None


async def until_cut(conn: Connection, req: ReadRequest, begin: int, seq0: int, have: int) -> int | None:
    """``_event_cut``, once the event watch has looked at the bytes this read holds (a bounded wait: it
    waits only when the watch is close behind): a read over history ends on its events, not before."""
    cut = _event_cut(conn, req, begin, seq0, have)
    if cut is None and conn.events.scanned_to < begin + have:
        await conn.events.settle(begin + have)
        cut = _event_cut(conn, req, begin, seq0, have)
    return cut


def _event_cut(conn: Connection, req: ReadRequest, begin: int, seq0: int, have: int) -> int | None:
    """Where an ``until`` read ends: the number of its bytes to keep (the event's lines and their line
    end), or None while no such event has been found. An event that ended before ``begin`` but was
    found during this read (its bytes were read before it was complete) ends the read as it stands."""
    assert req.until is not None
    hit = conn.events.first(req.until, begin, seq0)
    if hit is None:
        return None
    cut = hit.event.end - begin
    if cut <= 0:
        return have
    return None if cut > have else cut  # past ``have``: its last bytes are not in this read yet


def past_line_end(buf: bytes | bytearray, cut: int) -> int:
    """``cut`` moved past the line end that follows it (CR, LF or CRLF), when it is in ``buf``."""
    if buf[cut : cut + 2] == b"\r\n":
        return cut + 2
    return cut + 1 if cut < len(buf) and buf[cut] in (0x0D, 0x0A) else cut


def advance_cursor(conn: Connection, req: ReadRequest, start: int | None, next_offset: int) -> str | None:
    """A plain cursor read consumes what it returned; transact (explicit start) moves it past the reply."""
    if req.from_ != "cursor":
        return None
    with conn.thread_lock:
        cur = conn.rx.cursor(req.cursor)
        if start is None:
            cur.offset = next_offset
        elif next_offset > cur.offset:
            cur.offset = next_offset
            cur.drop_decoder()
    return req.cursor


def outcome(
    conn: Connection, begin: int, end: int, lost: int, stop: StopReason, cursor: str | None
) -> ReadOutcome:
    """A read's result over ``[begin, end)`` after ``lost`` bytes (counted on the connection too);
    the callers add what their kind of read returns (``_replace``)."""
    conn.bytes_lost_total += lost
    return ReadOutcome(begin, end, lost, stop, max(0, conn.rx_end() - end), cursor)
