"""What is on a port, judged from its bytes (issue 39 item 1): listening, the safe pokes, their replies.

Sans-IO, like h11: bytes in, verdicts out; the ``identify`` engine operation does the reading and writing.

* :func:`judge_heard` says what listening alone tells: checksummed frames first (two NMEA sentences, UBX
  frames), then the fingerprint table (:mod:`.port_kinds_table`: prompts at the tail, banners, boot and log
  lines, modem URCs), then how text-like the bytes are (:func:`~serial_mcp.core.baud.score_text`). Never a
  guess: weak or mixed evidence gives ``text_stream``/``binary_stream``/``unknown`` with ``settled=False``.
* :func:`pokes_for` lists the safe pokes still worth sending, in order. Send them one at a time, judge each
  reply with :func:`judge_reply`, and stop at the first verdict that is settled or holds off (or ask
  :func:`pokes_for` again with the new verdict, skipping pokes already sent): a Modbus read is only worth
  sending where nothing text-like answered the ``\\r`` and ``AT\\r`` before it.
* Nothing here resets a board or syncs a flash loader, and nothing is offered while a boot is in progress or
  U-Boot counts down to autoboot (any byte stops it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.ansi import strip_ansi
from serial_mcp.core.baud import MIN_BYTES, MIN_SCORE, score_text
from serial_mcp.core.framing.base import Frame
from serial_mcp.core.framing.gnss import GnssDecoder
from serial_mcp.core.framing.modbus_rtu import modbus_rtu_encode, response_length
from serial_mcp.core.port_kinds_table import (
    AT_FINAL,
    AT_OPEN,
    EMPTY,
    MICROPYTHON_SEEN,
    ROWS,
    Confidence,
    KindRow,
)

__all__ = ["KINDS", "Confidence", "Poke", "Verdict", "escaped", "judge_heard", "judge_reply", "pokes_for"]

KINDS: Final[tuple[str, ...]] = (
    "uboot",
    "linux_login",
    "linux_shell",
    "micropython",
    "at_modem",
    "nmea_gps",
    "ublox",
    "modbus_rtu",
    "esp_rom",
    "esp_idf_app",
    "zephyr",
    "text_stream",
    "binary_stream",
    "silent",
    "unknown",
)
#: Kinds that say only how the bytes look, not what sent them.
GENERIC_KINDS: Final = frozenset({"text_stream", "binary_stream", "silent", "unknown"})

SCAN_BYTES: Final = 1 << 16  # the tail of what was heard that is judged
BOOT_TAIL_LINES: Final = 40  # a boot line this far from the end still counts as a boot in progress
EVIDENCE_MAX: Final = 48
_FEW_DISTINCT: Final = 4  # a UART set far too fast reads a text console as a few values (0x00, 0x80 …)
_ALNUM: Final = re.compile(rb"[A-Za-z0-9]")
_LINE_BREAK: Final = re.compile(r"[\r\n]+")
_PRINTK: Final = re.compile(r"\[ *\d+\.\d{6}\]")  # a kernel message's time stamp
_crc16 = checksums.function("crc16_modbus")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What is on a port: its kind, how sure, the bytes that decided it, and how to talk to it."""

    kind: str
    confidence: Confidence
    evidence: str  # <= 48 printable characters: the line or frame that decided it ("" for silent)
    open: Mapping[str, object]  # ``open`` arguments beyond port and baud_rate ({} = plain line text)
    prompt: str | None = None  # the prompt a transact waits for
    hold_off: str | None = None  # why no byte may be sent now
    settled: bool = True  # False while listening or poking more could still change the kind


@dataclass(frozen=True, slots=True)
class Poke:
    """One safe poke: the bytes to write, how long to listen, and the UART settings to write them with."""

    name: str  # "cr", "at", "micropython_interrupt", "micropython_banner", "modbus"
    data: bytes
    wait_ms: int
    settings: Mapping[str, object] = field(default_factory=lambda: EMPTY)  # {} = as the port is


# --- evidence -------------------------------------------------------------------------------------------


def escaped(data: bytes) -> str:
    """``data`` as at most EVIDENCE_MAX printable characters (``\\r``, ``\\n``, ``\\xNN`` escapes)."""
    parts: list[str] = []
    size = 0
    for byte in data:
        piece = "\\r" if byte == 0x0D else "\\n" if byte == 0x0A else chr(byte) if 0x20 <= byte < 0x7F else ""
        piece = piece or f"\\x{byte:02x}"
        if size + len(piece) > EVIDENCE_MAX - 1:
            return "".join(parts) + "…"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


def _hex(data: bytes, room: int = EVIDENCE_MAX) -> str:
    """``b5 62 01 07 …``: as many bytes as fit in ``room`` characters."""
    fit = (room + 1) // 3
    if len(data) <= fit:
        return data.hex(" ")
    return data[: (room - 1) // 3].hex(" ") + " …"


def _line_evidence(line: str) -> str:
    return escaped(line.lstrip().encode("utf-8", "replace"))


# --- listening ------------------------------------------------------------------------------------------


def _frames_verdict(data: bytes) -> Verdict | None:
    """Checksummed GNSS frames: >= 2 UBX (or 1 beside NMEA) -> ublox, >= 2 NMEA -> nmea_gps, RTCM3 only ->
    a binary stream of known frames."""
    if b"$" not in data and b"!" not in data and b"\xb5\x62" not in data and b"\xd3" not in data:
        return None
    decoder = GnssDecoder()
    events = decoder.feed(data) + decoder.flush()
    good = [e.data for e in events if isinstance(e, Frame) and e.checksum_valid]
    ubx = [f for f in good if f[:2] == b"\xb5\x62"]
    nmea = [f for f in good if f[:1] in (b"$", b"!")]
    rtcm = [f for f in good if f[:1] == b"\xd3"]
    if ubx and (len(ubx) >= 2 or len(nmea) >= 2):
        first = _hex(ubx[0], EVIDENCE_MAX - 22)
        evidence = messages.KIND_FRAMES.format(count=len(ubx), what="UBX", first=first)
        return Verdict("ublox", "high", escaped(evidence.encode()), {"protocol": "gnss"})
    if len(nmea) >= 2:
        return Verdict("nmea_gps", "high", escaped(nmea[0]), {"protocol": "nmea0183"})
    if len(rtcm) >= 2:
        first = _hex(rtcm[0], EVIDENCE_MAX - 24)
        evidence = messages.KIND_FRAMES.format(count=len(rtcm), what="RTCM3", first=first)
        return Verdict("binary_stream", "high", escaped(evidence.encode()), {"protocol": "gnss"})
    return None


def _lines(data: bytes) -> list[str]:
    """The non-blank lines of ``data`` as text: ANSI escapes removed, bad UTF-8 replaced, no line endings."""
    text = strip_ansi(data)[0].decode("utf-8", "replace")
    return [line for line in _LINE_BREAK.split(text) if line.strip()]


_PROMPT_ROWS: Final = tuple(r for r in ROWS if r.role == "prompt")
_LINE_ROWS: Final = tuple(r for r in ROWS if r.role != "prompt")


def _prompt_line(lines: list[str]) -> str:
    """The line a prompt would be on: the last one, but for kernel messages printed after the prompt (on
    lines of their own, or on the prompt's line): they do not change what answers a key."""
    i = len(lines) - 1
    while i > 0 and _PRINTK.match(lines[i].lstrip()):
        i -= 1
    m = _PRINTK.search(lines[i], 1)
    return lines[i] if m is None else lines[i][: m.start()]


def _first_match(rows: tuple[KindRow, ...], line: str) -> tuple[KindRow, re.Match[str]] | None:
    for row in rows:
        m = row.pattern.search(line)
        if m is not None:
            return row, m
    return None


def _verdict(
    row: KindRow, m: re.Match[str], line: str, seen: set[str], hold_off: str | None = None
) -> Verdict:
    """The verdict a matched row gives; its confidence rises to high beside a strong cue of its kind."""
    prompt = m.group("prompt") if row.prompt == "" else row.prompt
    confidence: Confidence = "high" if row.kind in seen else row.confidence
    settled = row.settles and hold_off is None
    return Verdict(row.kind, confidence, _line_evidence(line), row.open, prompt, hold_off, settled)


def _text_verdict(data: bytes) -> Verdict:
    """No fingerprint matched: text, binary, too few bytes, or garbage at a wrong rate."""
    count = len(data)
    if count < MIN_BYTES:
        return Verdict("unknown", "low", messages.KIND_FEW_BYTES.format(count=count), EMPTY, settled=False)
    if score_text(data) >= MIN_SCORE:
        tail = _lines(data[-512:])
        return Verdict(
            "text_stream", "medium", _line_evidence(tail[-1] if tail else ""), EMPTY, settled=False
        )
    if len(set(data[-SCAN_BYTES:])) <= _FEW_DISTINCT:
        return Verdict("unknown", "low", messages.KIND_NOT_TEXT.format(count=count), EMPTY, settled=False)
    first = _hex(data, EVIDENCE_MAX - len(messages.KIND_BINARY.format(count=count, first="")))
    evidence = messages.KIND_BINARY.format(count=count, first=first)
    return Verdict("binary_stream", "low", evidence, EMPTY, settled=False)


def judge_heard(heard: bytes, quiet_ms: float) -> Verdict:
    """What listening alone tells about a port that said ``heard`` and has been quiet for ``quiet_ms``."""
    if not heard:
        return Verdict("silent", "high", "", EMPTY, settled=False)
    data = heard[-SCAN_BYTES:]
    framed = _frames_verdict(data)
    if framed is not None:
        return framed
    lines = _lines(data)
    seen: set[str] = set()
    latest: tuple[int, KindRow, re.Match[str]] | None = None
    for i, line in enumerate(lines):
        hit = _first_match(_LINE_ROWS, line)
        if hit is not None:
            latest = (i, *hit)
            if hit[0].confidence == "high":
                seen.add(hit[0].kind)  # a strong cue of a kind makes its weaker cues sure too
    tail = _prompt_line(lines) if lines else ""
    prompt = _first_match(_PROMPT_ROWS, tail)
    if prompt is not None:
        return _verdict(*prompt, tail, seen)
    if latest is None:
        return _text_verdict(data)
    index, row, m = latest
    booting = quiet_ms < row.hold_ms and len(lines) - index <= BOOT_TAIL_LINES
    hold = messages.KIND_HOLD_COUNTDOWN if row.role == "countdown" else messages.KIND_HOLD_BOOT
    hold_off = hold if booting else None
    if not row.kind:  # a boot stage that does not say what will answer (a kernel's log): a "\r" will show
        evidence = _line_evidence(lines[index])
        return Verdict("text_stream", "medium", evidence, EMPTY, hold_off=hold_off, settled=False)
    return _verdict(row, m, lines[index], seen, hold_off)


# --- poking ---------------------------------------------------------------------------------------------

CR: Final = Poke("cr", b"\r", 500)
AT: Final = Poke("at", b"AT\r", 500)
MICROPYTHON_INTERRUPT: Final = Poke("micropython_interrupt", b"\x03", 300)
MICROPYTHON_BANNER: Final = Poke("micropython_banner", b"\x02", 500)
MODBUS_SLAVES: Final = (1, 2, 3)
MODBUS_RATES: Final = (9600, 19200)
MODBUS_FRAMINGS: Final = (("even", "8E1"), ("none", "8N1"))
MODBUS_WAIT_MS: Final = 200


def _modbus_read(slave: int) -> bytes:
    """Read holding register 0, count 1, of ``slave``: ``sa 03 00 00 00 01`` and its CRC."""
    return modbus_rtu_encode(bytes([slave, 3, 0, 0, 0, 1]))


MODBUS_POKES: Final = tuple(
    Poke(
        "modbus",
        _modbus_read(slave),
        MODBUS_WAIT_MS,
        MappingProxyType({"baud_rate": rate, "data_bits": 8, "parity": parity, "stop_bits": 1}),
    )
    for rate in MODBUS_RATES
    for parity, _ in MODBUS_FRAMINGS
    for slave in MODBUS_SLAVES
)


def pokes_for(verdict: Verdict, heard: bytes) -> list[Poke]:
    """The safe pokes still worth sending, in order (see the module's docstring); [] when ``verdict`` is
    settled or holds off. Ctrl-C and Ctrl-B only where MicroPython was heard; Modbus reads only where
    nothing text-like was heard."""
    if verdict.settled or verdict.hold_off is not None:
        return []
    if MICROPYTHON_SEEN.search(heard[-SCAN_BYTES:]) is not None:
        return [MICROPYTHON_INTERRUPT, MICROPYTHON_BANNER]
    if verdict.kind == "at_modem":
        return [AT]
    if verdict.kind == "binary_stream" or (verdict.kind == "unknown" and len(heard) >= MIN_BYTES):
        return []  # chatter that is not text: a rate to change, not a prompt to ask for
    pokes = [CR] if verdict.kind in ("uboot", "zephyr") else [CR, AT]
    if verdict.kind in ("silent", "unknown") and _ALNUM.search(heard) is None:
        pokes += MODBUS_POKES
    return pokes


def _modbus_reply(poke: Poke, reply: bytes) -> Verdict | None:
    """A CRC-checked register reply or exception reply from the poked slave, anywhere in ``reply``."""
    slave = poke.data[0]
    for s in (i for i in range(len(reply) - 4) if reply[i] == slave):
        fc = reply[s + 1]
        if fc not in (3, 0x83) or (fc == 3 and (reply[s + 2] == 0 or reply[s + 2] & 1)):  # registers: 2 bytes
            continue
        length = response_length(reply, s, len(reply))
        frame = reply[s : s + length] if length else b""
        if len(frame) == length and _crc16(frame[:-2]) == int.from_bytes(frame[-2:], "little"):
            parity = str(poke.settings.get("parity", "none"))
            framing = dict(MODBUS_FRAMINGS).get(parity, parity)
            rate = poke.settings.get("baud_rate", "")
            text = messages.KIND_MODBUS_REPLY.format(
                slave=slave, baud=rate, framing=framing, frame=frame.hex(" ")
            )
            settings = {k: v for k, v in poke.settings.items() if k != "baud_rate"}
            return Verdict(
                "modbus_rtu", "high", escaped(text.encode()), {"protocol": "modbus_rtu", **settings}
            )
    return None


def judge_reply(poke: Poke, reply: bytes, before: Verdict) -> Verdict:
    """The verdict after ``poke`` was answered with ``reply`` (the bytes heard after it was written);
    ``before`` when the reply says nothing new (nothing, an echo, noise)."""
    if poke.name == "modbus":
        return _modbus_reply(poke, reply) or before
    if not reply.strip(b"\r\n") or reply.strip(b"\r\n") == poke.data.strip(b"\r\n"):
        return before
    if poke.name == "at":
        for line in _lines(reply):
            if AT_FINAL.match(line.strip()):
                evidence = messages.KIND_REPLY.format(poke="AT", reply=line.strip())
                return Verdict("at_modem", "high", escaped(evidence.encode()), AT_OPEN)
    heard = judge_heard(reply, 0.0)
    if heard.kind not in GENERIC_KINDS:
        sure = heard.confidence == "high" or heard.kind == before.kind
        return replace(heard, confidence="high") if sure else heard
    return heard if before.kind == "silent" else before
