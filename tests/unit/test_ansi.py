"""ANSI/VT100 stripping: the real ESP32 boot log, each sequence family, damage, chunking."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.ansi import MAX_CSI_LENGTH, MAX_STRING_LENGTH, AnsiStripper, strip_ansi

ESP32 = Path(__file__).parents[1] / "data" / "bootlogs" / "esp32" / "esp32-mdf-boot.txt"
SETTINGS = settings(max_examples=200, deadline=None)


@pytest.fixture(scope="module")
def esp32_log() -> bytes:
    return ESP32.read_bytes()


def chunked(data: bytes, cuts: list[int], *, c1: bool = False) -> tuple[bytes, int]:
    """Strip ``data`` fed in pieces split at ``cuts`` (positions, any order)."""
    stripper = AnsiStripper(c1=c1)
    out = bytearray()
    total = 0
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for start, end in itertools.pairwise(bounds):
        text, count = stripper.feed(data[start:end])
        out += text
        total += count
    tail, count = stripper.flush()
    assert stripper.removed == total + count
    return bytes(out + tail), total + count


# --- the real ESP32 log ----------------------------------------------------------------------------


def test_esp32_log_has_no_escape_left(esp32_log: bytes) -> None:
    text, count = strip_ansi(esp32_log)
    assert b"\x1b" not in text
    assert count == esp32_log.count(b"\x1b") == 1289  # every sequence in it starts with its own ESC


def test_esp32_log_visible_text_intact(esp32_log: bytes) -> None:
    text, _ = strip_ansi(esp32_log)
    # Same as removing each complete CSI with an independent regex: nothing visible is lost.
    assert text == re.sub(rb"\x1b\[[0-?]*[ -/]*[@-~]", b"", esp32_log)
    lines = text.split(b"\n")
    assert b"I (568) cpu_start: Pro cpu up." in lines
    assert b"E (31) esp_image: image at 0x30000 has invalid magic byte" in lines
    assert (
        b"W (393) phy_init: failed to load RF calibration data (0x1102), falling back to full calibration"
        in lines
    )
    assert b"D (309) light_driver: [light_init, 74]:status: 1, mode: 2" in lines
    assert text.count(b"\n") == esp32_log.count(b"\n")
    # Cursor queries and moves (ESC[6n, ESC[999C, ESC[214D) are gone, not just the colours.
    assert b"[6n" not in text and b"[999C" not in text


def test_esp32_log_every_line_start_is_a_log_or_plain_line(esp32_log: bytes) -> None:
    text, _ = strip_ansi(esp32_log)
    coloured = [line for line in esp32_log.split(b"\n") if line.startswith(b"\x1b[0;3")]
    stripped = {line for line in text.split(b"\n")}
    for line in coloured:
        visible = re.sub(rb"\x1b\[[0-9;]*m", b"", line)
        assert re.match(rb"[EWIDV] \(\d+\) ", visible)
        assert visible in stripped


@SETTINGS
@given(st.lists(st.integers(min_value=0, max_value=80_000), max_size=40))
@pytest.mark.slow
def test_esp32_log_any_chunking_same_as_whole(cuts: list[int]) -> None:
    data = ESP32.read_bytes()
    assert chunked(data, cuts) == strip_ansi(data)


def test_esp32_log_byte_by_byte(esp32_log: bytes) -> None:
    sample = esp32_log[:6000]
    stripper = AnsiStripper()
    pieces = [stripper.feed(sample[i : i + 1]) for i in range(len(sample))]
    assert b"".join(p for p, _ in pieces) == strip_ansi(sample)[0]
    assert sum(c for _, c in pieces) == strip_ansi(sample)[1]


# --- sequence families ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "visible", "count"),
    [
        (b"\x1b[0;32mI (1) ok\x1b[0m", b"I (1) ok", 2),  # SGR colours
        (b"\x1b[38;2;255;0;0mred", b"red", 1),  # truecolour SGR
        (b"\x1b[?25lhidden\x1b[?25h", b"hidden", 2),  # DEC private mode
        (b"a\x1b[2J\x1b[Hb", b"ab", 2),  # clear screen, home
        (b"\x1b[6n\x1b[999C\x1b[214D", b"", 3),  # cursor query and moves
        (b"x\x1b[1 qy", b"xy", 1),  # CSI with an intermediate byte (DECSCUSR)
        (b"\x1b]0;my title\x07prompt$ ", b"prompt$ ", 1),  # OSC ended by BEL
        (b"\x1b]2;t\x1b\\rest", b"rest", 1),  # OSC ended by ST
        (b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", b"link", 2),  # OSC 8 hyperlink
        (b"\x1bPq#0;2;0;0;0\x1b\\after", b"after", 1),  # DCS
        (b"\x1b_apc\x1b\\z", b"z", 1),  # APC
        (b"\x1b(B\x1b)0text", b"text", 2),  # nF: character sets
        (b"\x1b#8x", b"x", 1),  # nF: DECALN
        (b"\x1b7saved\x1b8", b"saved", 2),  # two-byte: DECSC/DECRC
        (b"\x1bMup\x1bc", b"up", 2),  # two-byte: RI, RIS
        (b"\x1b=\x1b>k", b"k", 2),  # keypad modes
        (b"plain text\r\n", b"plain text\r\n", 0),
        (b"", b"", 0),
    ],
)
def test_sequence_families(raw: bytes, visible: bytes, count: int) -> None:
    assert strip_ansi(raw) == (visible, count)


# --- damaged input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "visible", "count"),
    [
        (b"a\x1b", b"a", 1),  # lone ESC at the end
        (b"a\x1b\x1b[31mb", b"ab", 2),  # ESC ESC [: the first ESC is dropped alone
        (b"\x1b[12\nnext", b"\nnext", 1),  # CSI broken by a newline keeps the newline
        (b"\x1b[1;2\x1b[0mz", b"z", 2),  # CSI broken by a new ESC
        (b"\x1b\xc3\xa9", "é".encode(), 1),  # ESC before a UTF-8 character leaves it whole
        (b"\x1b]0;title never ends\r\nline", b"\r\nline", 1),  # OSC ends at the line end
        (b"\x1b]0;t\x1bxafter", b"after", 2),  # OSC broken by ESC x: both removed
        (b"\x1b]0;t\x18after", b"\x18after", 1),  # CAN ends a string and is kept
        (b"\x1b(\x01x", b"\x01x", 1),  # nF broken by a control
    ],
)
def test_damaged_sequences(raw: bytes, visible: bytes, count: int) -> None:
    assert strip_ansi(raw) == (visible, count)


def test_overlong_csi_is_ended_and_text_kept() -> None:
    raw = b"\x1b[" + b"1" * (MAX_CSI_LENGTH + 10) + b"mEND"
    text, count = strip_ansi(raw)
    assert count == 1
    assert text.endswith(b"mEND") and text.startswith(b"1")
    assert len(text) == len(raw) - MAX_CSI_LENGTH


def test_overlong_string_is_ended() -> None:
    raw = b"\x1b]0;" + b"x" * MAX_STRING_LENGTH + b"\x07tail"
    text, count = strip_ansi(raw)
    assert count == 1
    assert text.endswith(b"\x07tail")
    assert len(text) == len(raw) - MAX_STRING_LENGTH


# --- UTF-8 and C1 ------------------------------------------------------------------------------------


def test_utf8_continuation_bytes_are_not_c1() -> None:
    text = "ě ✛ 盛 Ǜ".encode()  # contain 0x9B / 0x9D continuation bytes
    assert b"\x9b" in text
    assert strip_ansi(text) == (text, 0)
    coloured = b"\x1b[1m" + text + b"\x1b[0m"
    assert strip_ansi(coloured) == (text, 2)


def test_c1_introducers_when_asked() -> None:
    raw = b"a\x9b31mb\x9d0;title\x9cc\x90dcs\x9cd"
    assert strip_ansi(raw, c1=True) == (b"abcd", 3)
    assert strip_ansi(raw) == (raw, 0)


def test_in_sequence_flag() -> None:
    stripper = AnsiStripper()
    # each state read in one tuple with its feed: mypy would otherwise keep the first read narrowed
    assert (stripper.feed(b"ok\x1b[3"), stripper.in_sequence) == ((b"ok", 1), True)
    assert (stripper.feed(b"1mred"), stripper.in_sequence) == ((b"red", 0), False)
    assert stripper.removed == 1


# --- properties ------------------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x1b"), max_size=30).map(
    lambda s: s.encode()
)
SEQUENCES = st.sampled_from(
    [
        b"\x1b[0m",
        b"\x1b[0;32m",
        b"\x1b[?25l",
        b"\x1b[6n",
        b"\x1b[38;5;200m",
        b"\x1b]0;title\x07",
        b"\x1b]0;t\xc3\xa9\x1b\\",
        b"\x1bP1$r\x1b\\",
        b"\x1b(B",
        b"\x1b7",
        b"\x1bc",
        b"\x1b[1 q",
    ]
)


@SETTINGS
@given(st.lists(st.tuples(TEXT, SEQUENCES)), TEXT)
@pytest.mark.slow
def test_well_formed_sequences_vanish_and_text_stays(parts: list[tuple[bytes, bytes]], tail: bytes) -> None:
    raw = b"".join(t + s for t, s in parts) + tail
    visible = b"".join(t for t, _ in parts) + tail
    assert strip_ansi(raw) == (visible, len(parts))
    visible.decode()  # every UTF-8 character survived whole


TOKENS = st.sampled_from(
    [
        b"\x1b",
        b"[",
        b"]",
        b"(",
        b"P",
        b"\\",
        b"\x07",
        b"\n",
        b"\r",
        b"\x18",
        b"0",
        b"1",
        b";",
        b"?",
        b" ",
        b"m",
        b"A",
        b"a",
        b"\xc3\xa9",
        b"\x9b",
        b"\x9c",
        b"\x9d",
        b"~",
        b"#",
    ]
)


@SETTINGS
@given(st.lists(TOKENS, max_size=80).map(b"".join), st.lists(st.integers(0, 200), max_size=10), st.booleans())
@pytest.mark.slow
def test_any_chunking_same_as_whole(raw: bytes, cuts: list[int], c1: bool) -> None:
    assert chunked(raw, cuts, c1=c1) == strip_ansi(raw, c1=c1)


@SETTINGS
@given(st.binary(max_size=300), st.booleans())
def test_no_escape_survives_and_plain_bytes_are_kept(raw: bytes, c1: bool) -> None:
    text, count = strip_ansi(raw, c1=c1)
    assert b"\x1b" not in text
    assert count <= raw.count(b"\x1b") + sum(raw.count(bytes([b])) for b in b"\x90\x98\x9b\x9d\x9e\x9f") * c1
    assert len(text) <= len(raw)
    if b"\x1b" not in raw and not c1:
        assert text == raw and count == 0
    # Output is a subsequence of the input: stripping only removes.
    it = iter(raw)
    assert all(b in it for b in text)
