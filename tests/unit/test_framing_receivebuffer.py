"""The shared buffer-and-resync helper, and the skipped-byte counts it gives start_end framing."""

from __future__ import annotations

from serial_mcp.core.framing import Frame, StartEndDecoder, build_decoder
from serial_mcp.core.framing._receivebuffer import ReceiveBuffer


def find_crlf(buf: bytearray, start: int) -> tuple[int, int] | None:
    i = buf.find(b"\r\n", start)
    return None if i < 0 else (i, 2)


def test_discard_through_keeps_a_possible_partial_terminator() -> None:
    rx = ReceiveBuffer(100)
    assert rx.discard_through(b"xxxx\r", find_crlf, 1) is None
    assert rx.base == 104 and bytes(rx.buf) == b"\r"
    assert rx.discard_through(b"\nrest", find_crlf, 1) == b"rest"
    assert rx.base == 106 and not rx.buf


def test_absorb_waits_for_what_the_decoder_needs() -> None:
    rx = ReceiveBuffer()
    rx.keep(b"abc", 1, need=5)
    assert rx.base == 1 and bytes(rx.buf) == b"bc"
    assert rx.absorb(b"d") is None
    assert rx.absorb(b"e") is None
    assert rx.absorb(b"f") == b"bcdef"


def test_start_end_counts_line_noise() -> None:
    decoder = build_decoder({"type": "start_end", "start": [":"], "end": "\r\n"})
    frames = decoder.feed(b"noise:0103\r\nxy") + decoder.feed(b"z:01\r\n!!") + decoder.flush()
    assert [f.data if isinstance(f, Frame) else f for f in frames] == [b"0103", b"01"]
    assert isinstance(decoder, StartEndDecoder)
    assert decoder.bytes_skipped == len(b"noise") + len(b"xyz") + len(b"!!")
