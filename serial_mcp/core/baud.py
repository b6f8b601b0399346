"""Baud-rate detection, the pure part: score received bytes as text and rank candidate rates.

``detect_baud`` (in the engine) reads for a while at each candidate rate and hands the bytes
here. A device's console at the right rate reads as text: printable ASCII or valid UTF-8,
whitespace between words, line endings. At a wrong rate the UART samples the line at the
wrong instants: bytes come out with the high bits set, as 0x00/0xFF from framing errors and
breaks, in the wrong number, and the spaces and letters that make text are rare.

Nothing is guessed: :func:`rank` is *conclusive* only when one rate reads clearly as text
(or alone answered a probe) and every other rate is clearly worse. A silent device, too few
bytes, a binary protocol, or two rates that read alike give ``conclusive=False`` with the
reason, and ``best=None``.

:func:`simulate_garble` models the receiving UART (8N1, mid-bit sampling, framing errors
delivered as the sampled byte as Linux does without INPCK, breaks as 0x00) so tests and the
fake serial opener can show what a device sending at one rate looks like at another.
"""

from __future__ import annotations

import bisect
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from serial_mcp import messages
from serial_mcp.core.ansi import strip_ansi

#: Rates worth trying on an unknown console, in ascending order; 74880 is the ESP8266 ROM's
#: boot rate.
COMMON_RATES: Final = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 74880, 115200, 230400, 460800, 921600)
#: Fewest bytes at the best rate for a conclusive text verdict.
MIN_BYTES: Final = 16
#: Lowest text score that counts as "reads as text".
MIN_SCORE: Final = 0.6
#: Least lead of the best rate over the runner-up for a conclusive verdict.
MIN_MARGIN: Final = 0.2

#: Bytes of a sample that are scored; more says nothing new and costs time.
MAX_SCORED: Final = 1 << 16
_WORD: Final = re.compile(r"[^\W_]{2,}")  # runs of two or more letters/digits
_OK_CONTROLS: Final = frozenset("\t\r\n\x07\x08\x0c")


def _clamp(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def _band(value: float, low: float, high: float, soft: float) -> float:
    """1 inside ``[low, high]``, falling linearly to 0 at ``soft`` beyond either edge."""
    if value < low:
        return _clamp(1.0 - (low - value) / soft)
    if value > high:
        return _clamp(1.0 - (value - high) / soft)
    return 1.0


def score_text(data: bytes) -> float:
    """How much ``data`` looks like console text, from 0 (noise or binary) to 1.

    The product of a validity term (share of printable ASCII/UTF-8 characters, cubed so a
    tenth of garbage already costs a quarter of the score) and a structure term (whitespace
    share, letters/digits share, words of two or more letters, line lengths). ANSI escape
    sequences are removed first: colour codes are text, not noise. Each run of 0x00 or 0xFF
    bytes (the mark of breaks and framing errors) costs two bad characters more.
    """
    if not data:
        return 0.0
    text_bytes, _ = strip_ansi(data[:MAX_SCORED])
    if not text_bytes:
        return 0.5  # only escape sequences: text-like, but says little
    text = text_bytes.decode("utf-8", errors="replace")
    total = len(text)
    bad = 0
    printable = 0
    space = 0
    alnum = 0
    for char in text:
        if char.isprintable():
            if char == "\ufffd":
                bad += 1
                continue
            printable += 1
            if char == " ":
                space += 1
            elif char.isalnum():
                alnum += 1
        elif char in _OK_CONTROLS:
            if char in "\t\r\n":
                space += 1
        else:
            bad += 1
    runs = len(re.findall(rb"\x00\x00+|\xff\xff+", text_bytes))
    bad_share = _clamp((bad + 2 * runs) / total)
    validity = (1.0 - bad_share) ** 3
    shown = max(printable, 1)
    words = sum(len(w) for w in _WORD.findall(text))
    structure_parts = [
        _band(space / total, 0.04, 0.40, 0.10),  # text has whitespace between words
        _band(alnum / shown, 0.45, 1.0, 0.35),  # and is mostly letters and digits
        _clamp(words / shown / 0.5),  # that form words
    ]
    lines = re.split(r"[\r\n]+", text)
    if total >= 240:
        longest = max(len(line) for line in lines)
        structure_parts.append(_band(longest, 0, 240, 400))  # consoles break lines
    structure = sum(structure_parts) / len(structure_parts)
    return round(validity * (0.3 + 0.7 * structure), 4)


@dataclass(frozen=True, slots=True)
class BaudVerdict:
    """Ranked candidates, best first, and whether the evidence singles one out."""

    ranked: list[tuple[int, float]]
    best: int | None
    conclusive: bool
    reason: str


def _combined(score: float, answered: bool | None) -> float:
    """Text score blended with a probe answer: an answer lifts a rate above every silent one."""
    if answered is None:
        return score
    return round(0.5 + 0.5 * score, 4) if answered else round(0.5 * score, 4)


def rank(candidates: Mapping[int, bytes], probe_answer: Mapping[int, bool] | None = None) -> BaudVerdict:
    """Rank candidate rates by how text-like their bytes are (and by a probe's answer).

    ``candidates`` maps each tried rate to the bytes read at it; ``probe_answer`` (optional)
    maps rates to whether the expected answer or echo to a probe string came back at that
    rate; rates that answered rank above those that did not. Conclusive when exactly one
    rate answered the probe, or (no answer anywhere) when the best rate read at least
    MIN_BYTES bytes scoring MIN_SCORE or more and leads the next by MIN_MARGIN.
    """
    probe = {baud: answered for baud, answered in (probe_answer or {}).items() if baud in candidates}
    use_probe = any(probe.values())  # no answer anywhere says nothing about the rate
    scored = {
        baud: _combined(score_text(data), probe.get(baud, False) if use_probe else None)
        for baud, data in candidates.items()
    }
    order = sorted(candidates, key=lambda b: (-scored[b], -len(candidates[b]), b))
    ranked = [(baud, scored[baud]) for baud in order]

    def verdict(conclusive: bool, reason: str) -> BaudVerdict:
        return BaudVerdict(ranked, order[0] if conclusive else None, conclusive, reason)

    if not candidates:
        return verdict(False, messages.BAUD_NO_CANDIDATES)
    answered = [baud for baud in order if probe.get(baud)]
    if len(answered) == 1:
        return verdict(True, messages.BAUD_PROBE_ONE.format(baud=answered[0]))
    if len(answered) > 1:
        listed = ", ".join(str(b) for b in answered)
        return verdict(False, messages.BAUD_PROBE_MANY.format(bauds=listed))
    if not any(candidates.values()):
        return verdict(False, messages.BAUD_SILENT.format(count=len(candidates)))
    best = order[0]
    best_score = scored[best]
    received = len(candidates[best])
    if received < MIN_BYTES:
        return verdict(False, messages.BAUD_TOO_FEW.format(baud=best, count=received, need=MIN_BYTES))
    if best_score < MIN_SCORE:
        return verdict(False, messages.BAUD_NOT_TEXT.format(baud=best, score=best_score))
    if len(order) > 1:
        second, second_score = ranked[1]
        if best_score - second_score < MIN_MARGIN:
            return verdict(
                False,
                messages.BAUD_TOO_CLOSE.format(
                    baud=best, score=best_score, other=second, other_score=second_score
                ),
            )
        return verdict(
            True,
            messages.BAUD_TEXT.format(baud=best, score=best_score, other=second, other_score=second_score),
        )
    return verdict(True, messages.BAUD_TEXT_ONLY.format(baud=best, score=best_score))


# --- the UART simulator -----------------------------------------------------------------------------


#: Each byte's 8N1 frame on the line, one entry per bit: start (0), data LSB first, stop (1).
_FRAMES: Final = tuple(bytes([0, *((value >> k) & 1 for k in range(8)), 1]) for value in range(256))


def _line_signal(text: bytes, rng: random.Random) -> bytearray:
    """The TX line, one entry per bit time at the true rate: 8N1 frames with idle (1) gaps."""
    bits = bytearray(b"\x01\x01")
    for byte in text:
        bits += _FRAMES[byte]
        if byte == 0x0A:
            bits += b"\x01" * rng.randint(0, 40)  # a pause after most lines
        elif rng.random() < 0.05:
            bits += b"\x01" * rng.randint(1, 6)
    bits += b"\x01" * 12
    return bits


def simulate_garble(text: bytes, true_baud: int, configured_baud: int, seed: int = 0) -> bytes:
    """What a UART set to ``configured_baud`` reads when the device sends ``text`` at ``true_baud``.

    Deterministic for a given ``seed`` (which picks the idle gaps between characters);
    ``text`` itself when the rates are equal or within UART tolerance (about 3 %). The
    receiver waits for a falling edge, samples each bit in its middle at its own rate, and
    delivers a byte with a framing error as sampled (0x00 for a break); too slow a setting
    yields fewer, mangled bytes, too fast a setting yields more, full of 0x00/0x80-0xFF.
    """
    if true_baud == configured_baud or not text:
        return text
    rng = random.Random(seed)
    bits = _line_signal(text, rng)
    edges = [m.start() + 1 for m in re.finditer(b"\x01\x00", bits)]
    ratio = true_baud / configured_baud  # one configured bit, in true bit times
    last = len(bits) - 1
    offsets = [(bit + 1.5) * ratio for bit in range(8)]
    out = bytearray()
    position = 0.0  # the line is idle when reception starts
    k = 0
    while True:
        k = bisect.bisect_left(edges, position, k)
        if k == len(edges):
            break
        edge = edges[k]
        if bits[min(int(edge + 0.5 * ratio), last)]:  # start bit not low in its middle: a glitch
            position = edge + 0.5 * ratio
            continue
        value = 0
        for bit, offset in enumerate(offsets):
            if bits[min(int(edge + offset), last)]:
                value |= 1 << bit
        out.append(value)  # a framing error (low stop bit) still delivers the sampled byte
        position = edge + 9.5 * ratio
    return bytes(out)
