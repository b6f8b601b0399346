"""Line framing: auto CR/LF/CRLF handling across chunks, options, and real boot logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from serial_mcp.core.framing import (
    Frame,
    FrameDecoder,
    FramingError,
    LineDecoder,
    LineEncoder,
    build_decoder,
    build_encoder,
)

BOOTLOGS = sorted((Path(__file__).parents[1] / "data" / "bootlogs").glob("*/*"))


def feed_in(decoder: FrameDecoder, data: bytes, size: int) -> list[Frame | FramingError]:
    return [e for i in range(0, len(data), size) for e in decoder.feed(data[i : i + size])]


def datas(events: list[Frame | FramingError]) -> list[bytes]:
    return [e.data for e in events if isinstance(e, Frame)]


# --- auto -------------------------------------------------------------------------------------------


def test_auto_handles_lf_cr_and_crlf_in_one_stream() -> None:
    events = LineDecoder().feed(b"a\nb\rc\r\nd\n\re\r")
    assert datas(events) == [b"a", b"b", b"c", b"d", b"", b"e"]


def test_crlf_split_across_chunks_is_one_terminator() -> None:
    decoder = LineDecoder()
    first = decoder.feed(b"OK\r")
    assert first == [Frame(b"OK", 0, 3)]  # emitted at once: a CR-only device is not held back
    assert decoder.pending_start == 3
    assert decoder.feed(b"\n") == []  # the LF completes the CRLF; no extra empty line
    assert decoder.pending_start == 4
    assert decoder.feed(b"\r\nNEXT\r\n") == [Frame(b"", 4, 5), Frame(b"NEXT", 6, 11)]


def test_crlf_frames_end_after_the_cr_whatever_the_chunking() -> None:
    whole = LineDecoder().feed(b"AT\r\nOK\r\n")
    assert whole == [Frame(b"AT", 0, 3), Frame(b"OK", 4, 7)]
    assert feed_in(LineDecoder(), b"AT\r\nOK\r\n", 1) == whole


def test_lf_after_a_cr_in_a_later_chunk_only_skipped_once() -> None:
    decoder = LineDecoder()
    decoder.feed(b"x\r")
    assert decoder.feed(b"\n\n") == [Frame(b"", 3, 4)]


def test_include_terminators_waits_for_the_byte_after_cr() -> None:
    decoder = LineDecoder(include_terminators=True)
    assert decoder.feed(b"OK\r") == []
    assert decoder.feed(b"\n") == [Frame(b"OK\r\n", 0, 4)]
    assert decoder.feed(b"X\r") == []
    assert decoder.feed(b"Y") == [Frame(b"X\r", 4, 6)]
    assert decoder.flush() == [Frame(b"Y", 6, 7)]


def test_flush_releases_a_held_cr_line() -> None:
    decoder = LineDecoder(include_terminators=True)
    decoder.feed(b"prompt\r")
    assert decoder.flush() == [Frame(b"prompt\r", 0, 7)]
    assert decoder.pending_start == 7


def test_skip_empty() -> None:
    assert datas(LineDecoder(skip_empty=True).feed(b"\r\nOK\r\n\r\n+CSQ: 1\r\n")) == [b"OK", b"+CSQ: 1"]


def test_flush_emits_the_unterminated_tail() -> None:
    decoder = LineDecoder(offset=10)
    assert decoder.feed(b"a\nroot@OpenWrt:/# ") == [Frame(b"a", 10, 12)]
    assert decoder.pending_start == 12
    assert decoder.flush() == [Frame(b"root@OpenWrt:/# ", 12, 28)]
    assert decoder.flush() == []


def test_reset_after_a_gap() -> None:
    decoder = LineDecoder()
    decoder.feed(b"partial line that will be lo")
    decoder.reset(5000)
    assert decoder.feed(b"st\nnext\n") == [Frame(b"st", 5000, 5003), Frame(b"next", 5003, 5008)]


def test_reset_clears_a_pending_lf_skip() -> None:
    decoder = LineDecoder()
    decoder.feed(b"a\r")
    decoder.reset(100)
    assert decoder.feed(b"\nb\n") == [Frame(b"", 100, 101), Frame(b"b", 101, 103)]


# --- fixed endings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ending", "expected"),
    [("lf", [b"a\r", b"b\rc", b"\r"]), ("cr", [b"a", b"\nb", b"c\n"]), ("crlf", [b"a", b"b\rc\n"])],
)
def test_fixed_endings(ending: str, expected: list[bytes]) -> None:
    data = b"a\r\nb\rc\n\r\n"
    assert datas(LineDecoder(ending).feed(data)) == expected


def test_crlf_terminator_split_across_chunks() -> None:
    decoder = LineDecoder("crlf", include_terminators=True)
    assert decoder.feed(b"abc\r") == []
    assert decoder.feed(b"\ndef\r") == [Frame(b"abc\r\n", 0, 5)]
    assert decoder.feed(b"x\r\n") == [Frame(b"def\rx\r\n", 5, 12)]


# --- max_length -----------------------------------------------------------------------------------


def test_overlong_line_is_one_error_then_decoding_resumes() -> None:
    decoder = LineDecoder(max_length=8)
    events = decoder.feed(b"ok\n" + b"x" * 20) + decoder.feed(b"y" * 20) + decoder.feed(b"\r\nfine\n")
    assert events[0] == Frame(b"ok", 0, 3)
    assert isinstance(events[1], FramingError) and events[1].offset == 3
    assert events[2:] == [Frame(b"fine", 45, 50)]


def test_line_of_exactly_max_length_is_kept() -> None:
    assert feed_in(LineDecoder(max_length=4), b"abcd\r\n", 1) == [Frame(b"abcd", 0, 5)]


# --- encoder --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ending", "wire"), [("lf", b"AT\n"), ("cr", b"AT\r"), ("crlf", b"AT\r\n")])
def test_encoder(ending: str, wire: bytes) -> None:
    assert LineEncoder(ending).encode(b"AT") == wire
    assert build_encoder({"type": "line", "ending": ending}).encode(b"AT") == wire


def test_encoder_defaults_to_lf() -> None:
    assert build_encoder({"type": "line"}).encode(b"G0 X1") == b"G0 X1\n"


# --- real boot logs -------------------------------------------------------------------------------


def independent_lines(data: bytes) -> list[bytes]:
    """Lines by plain normalisation: CRLF -> LF, then CR -> LF, split, drop the unterminated tail."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")[:-1]


@pytest.mark.parametrize("path", BOOTLOGS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("chunk", [1, 7, 64, 4096, 1 << 20])
def test_bootlogs_split_into_the_right_lines(path: Path, chunk: int) -> None:
    data = path.read_bytes()
    expected = independent_lines(data)
    assert len(expected) > 500
    decoder = build_decoder({"type": "line", "ending": "auto"})
    events = feed_in(decoder, data, chunk)
    assert all(isinstance(e, Frame) for e in events)
    assert datas(events) == expected
    assert decoder.pending_start == len(data) - len(data.rsplit(b"\n", 1)[-1])


@pytest.mark.parametrize("path", BOOTLOGS, ids=lambda p: p.parent.name)
def test_bootlogs_with_terminators_reassemble_exactly(path: Path) -> None:
    data = path.read_bytes()
    decoder = LineDecoder(include_terminators=True)
    frames = feed_in(decoder, data, 13) + decoder.flush()
    assert b"".join(f.data for f in frames if isinstance(f, Frame)) == data


def test_bootlog_cut_between_every_cr_and_lf() -> None:
    data = (Path(__file__).parents[1] / "data" / "bootlogs" / "openwrt-M32" / "Bootlog.txt").read_bytes()
    chunks = data.split(b"\n")  # every chunk but the first starts with the LF of a CRLF
    decoder = LineDecoder()
    events = decoder.feed(chunks[0]) + [e for c in chunks[1:] for e in decoder.feed(b"\n" + c)]
    assert datas(events) == independent_lines(data)
