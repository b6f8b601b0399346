"""XMODEM/YMODEM machines: wire format against the specifications, sender <-> receiver in
memory for every mode and size, injected line faults, cancellation both ways, retry limits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serial_mcp import messages
from serial_mcp.core.xmodem import XmodemReceiver, XmodemSender, YmodemReceiver, YmodemSender
from serial_mcp.core.xmodem_wire import (
    ABORT_SEQUENCE,
    ACK,
    CAN,
    CRC_REQUEST,
    EOT,
    NAK,
    SOH,
    STX,
    Done,
    Event,
    FileReceived,
    FileSent,
    FileStarted,
    Progress,
    Retry,
    TransferResult,
    YmodemFile,
    encode_block,
    parse_header,
)
from serial_mcp.errors import InvalidArgument

SIZES = [0, 1, 127, 128, 129, 1023, 1024, 5000]
MODES = ["checksum", "crc", "1k"]
Machine = XmodemSender | YmodemSender | XmodemReceiver | YmodemReceiver
Fault = Callable[[bytes], bytes]
E = TypeVar("E")


def payload(size: int, salt: int = 0) -> bytes:
    """Deterministic data that covers every byte value, including 0x1A, CAN, SOH and EOT."""
    return bytes((i * 7 + salt) & 0xFF for i in range(size))


@dataclass
class Link:
    """Two machines joined by a full-duplex line whose faults the test chooses.

    Each step moves what both sides queued; when nothing is in flight a timer runs out,
    the receiver's unless ``sender_timer`` says otherwise (the protocol is receiver-driven).
    """

    sender: Machine
    receiver: Machine
    to_receiver: list[Fault] = field(default_factory=list)  # applied to successive sender writes
    to_sender: list[Fault] = field(default_factory=list)  # applied to successive receiver writes
    sender_timer: Callable[[int], bool] = lambda _: False
    sender_events: list[Event] = field(default_factory=list)
    receiver_events: list[Event] = field(default_factory=list)
    wire_to_receiver: list[bytes] = field(default_factory=list)
    wire_to_sender: list[bytes] = field(default_factory=list)

    def step(self) -> bool:
        """Move one round of bytes; False when the line was quiet."""
        a = self.sender.next_output()
        b = self.receiver.next_output()
        if a:
            a = self.to_receiver.pop(0)(a) if self.to_receiver else a
            self.wire_to_receiver.append(a)
        if b:
            b = self.to_sender.pop(0)(b) if self.to_sender else b
            self.wire_to_sender.append(b)
        if a and not self.receiver.done:
            self.receiver_events += self.receiver.receive_bytes(a)
        if b and not self.sender.done:
            self.sender_events += self.sender.receive_bytes(b)
        return bool(a or b)

    def run(self, max_steps: int = 50_000) -> tuple[TransferResult, TransferResult]:
        quiet = 0
        for _ in range(max_steps):
            if self.sender.done and self.receiver.done:
                break
            if self.step():
                continue
            quiet += 1
            if self.sender.done or (not self.receiver.done and not self.sender_timer(quiet)):
                self.receiver_events += self.receiver.on_timeout()
            else:
                self.sender_events += self.sender.on_timeout()
        else:
            pytest.fail("the transfer did not finish")
        # Anything still queued (an abort sequence) reaches the other side.
        self.step()
        assert self.sender.result is not None and self.receiver.result is not None
        return self.sender.result, self.receiver.result


def keep(chunk: bytes) -> bytes:
    return chunk


def drop(chunk: bytes) -> bytes:
    return b""


def flip(position: int) -> Fault:
    def fault(chunk: bytes) -> bytes:
        i = position % len(chunk)
        return chunk[:i] + bytes([chunk[i] ^ 0xFF]) + chunk[i + 1 :]

    return fault


def duplicate(chunk: bytes) -> bytes:
    return chunk + chunk


def garble(chunk: bytes) -> bytes:
    """A reply turned into line noise (never into another control byte)."""
    return b"\xfe" * len(chunk)


def xmodem_expect(data: bytes, mode: str) -> bytes:
    """What an XMODEM receiver keeps: the data plus the 0x1A padding of the last block."""
    if not data:
        return b""
    if mode == "1k":
        size, out = len(data), 0
        while out < size:
            out += 1024 if size - out > 896 else 128
        return data.ljust(out, b"\x1a")
    return data.ljust(-(-len(data) // 128) * 128, b"\x1a")


def fell_back_to_checksum(link: Link) -> bool:
    """The receiver sent a NAK start request after its C requests, before it accepted a block."""
    before_ack = b"".join(link.wire_to_sender).split(bytes([ACK]))[0]
    return bytes([NAK]) in before_ack


def of_type(events: list[Event], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


# --- wire format against the specifications -------------------------------------------------------


def test_checksum_block_format() -> None:
    """Christensen: <SOH><blk #><255-blk #><128 data bytes><cksum>, sum of data bytes, carry tossed."""
    block = encode_block(1, b"A" * 100, crc=False)
    assert block[:3] == bytes([SOH, 0x01, 0xFE])
    assert block[3:103] == b"A" * 100 and block[103:131] == b"\x1a" * 28  # CPMEOF padding
    assert block[131] == (100 * 0x41 + 28 * 0x1A) & 0xFF
    assert len(block) == 132


def test_crc_block_format_and_number_wrap() -> None:
    """Byrns: CRC high byte first; numbers wrap 0xFF -> 0x00; STX for 1024-byte blocks."""
    block = encode_block(256, b"123456789", crc=True, size=1024, pad=0)
    assert block[:3] == bytes([STX, 0x00, 0xFF])
    assert len(block) == 3 + 1024 + 2
    # CRC-16/XMODEM of "123456789" is 0x31C3 (catalogue check value); here over the padded block.
    assert encode_block(1, b"", crc=True)[-2:] != b"\x00\x00"
    from serial_mcp.core.checksums import compute

    assert compute("crc16_xmodem", b"123456789") == 0x31C3
    assert block[-2:] == compute("crc16_xmodem", b"123456789".ljust(1024, b"\x00")).to_bytes(2, "big")


def test_ymodem_header_matches_forsberg_figure_4() -> None:
    """Forsberg, Figure 4: the filename packet sb sends for bbcsched.txt (6347 bytes), CRC CA 56."""
    file = YmodemFile("bbcsched.txt", b"x" * 6347, mtime=0o3314742513, mode=0o100644)
    sender = YmodemSender([file])
    sender.receive_bytes(bytes([CRC_REQUEST]))
    block = sender.next_output()
    assert block[:3] == bytes([SOH, 0x00, 0xFF])
    assert block[3:19] == b"bbcsched.txt\x006347 "[:16]
    assert block[3:].startswith(b"bbcsched.txt\x006347 3314742513 100644\x00")
    assert set(block[3 + 35 : 131]) == {0}
    assert block[-2:] == b"\xca\x56"
    header = parse_header(block[3:131])
    assert header is not None
    assert (header.name, header.declared_size, header.mtime, header.mode) == (
        "bbcsched.txt",
        6347,
        0o3314742513,
        0o100644,
    )


def test_parse_header_lenient() -> None:
    assert parse_header(bytes(128)) is None  # end of batch
    only_name = parse_header(b"boot.img\x00")
    assert only_name is not None and only_name.declared_size is None
    bad_size = parse_header(b"a\x00zz 17\x00")
    assert bad_size is not None and bad_size.declared_size is None and bad_size.mtime is None


# --- scripted conversations (the specifications' figures) ------------------------------------------


def test_receiver_figure_12_crc_with_line_hit_and_lost_ack() -> None:
    """Byrns, Figure 12: C; block 1 ACK; block 2 hit -> NAK, resent -> ACK; block 3 ACK lost,
    timeout -> NAK, block 3 again -> ACK (duplicate); EOT -> ACK."""
    data = payload(3 * 128)
    blocks = [encode_block(n, data[(n - 1) * 128 : n * 128], crc=True) for n in (1, 2, 3)]
    rx = XmodemReceiver("crc")
    assert rx.next_output() == b"C"
    rx.receive_bytes(blocks[0])
    assert rx.next_output() == bytes([ACK])
    hit = bytearray(blocks[1])
    hit[50] ^= 0x10
    events = rx.receive_bytes(bytes(hit))
    assert rx.next_output() == bytes([NAK]) and of_type(events, Retry)
    rx.receive_bytes(blocks[1])
    assert rx.next_output() == bytes([ACK])
    rx.receive_bytes(blocks[2])
    assert rx.next_output() == bytes([ACK])  # "ack gets garbaged" on the way
    rx.on_timeout()
    assert rx.next_output() == bytes([NAK])
    events = rx.receive_bytes(blocks[2])
    assert rx.next_output() == bytes([ACK])
    assert [e.reason for e in of_type(events, Retry)] == ["block repeated (an ACK was lost)"]
    events = rx.receive_bytes(bytes([EOT]))
    assert rx.next_output() == bytes([ACK])
    done = of_type(events, Done)[0].result
    assert done.ok and done.files[0].data == data and done.blocks == 3


def test_receiver_falls_back_to_checksum_after_three_c() -> None:
    """Byrns, Figure 11: a sender without CRC ignores C; after 3 tries the receiver sends NAK."""
    rx = XmodemReceiver("crc")
    assert rx.next_output() == b"C" and rx.timeout == 3.0
    rx.on_timeout()
    rx.on_timeout()
    assert rx.next_output() == b"CC"
    rx.on_timeout()
    assert rx.next_output() == bytes([NAK]) and rx.timeout == 10.0
    rx.receive_bytes(encode_block(1, b"old sender", crc=False))
    assert rx.next_output() == bytes([ACK])
    rx.receive_bytes(bytes([EOT]))
    result = rx.result
    assert result is not None and result.ok and result.files[0].data.rstrip(b"\x1a") == b"old sender"


def test_sender_follows_the_receivers_check() -> None:
    for request, crc in ((NAK, False), (CRC_REQUEST, True)):
        tx = XmodemSender(b"hi", "crc")
        assert tx.next_output() == b""  # receiver-driven: nothing until asked
        tx.receive_bytes(bytes([request]))
        assert tx.next_output() == encode_block(1, b"hi", crc=crc)


def test_1k_sender_falls_back_to_128_for_a_checksum_receiver() -> None:
    tx = XmodemSender(payload(3000), "1k")
    tx.receive_bytes(bytes([NAK]))
    block = tx.next_output()
    assert block[0] == SOH and len(block) == 132


def test_sender_switches_to_crc_on_a_late_c() -> None:
    """Byrns 7.2.3: a C before the first NAK or ACK puts the sender in CRC mode."""
    tx = XmodemSender(b"x", "crc")
    tx.receive_bytes(bytes([NAK]))
    assert tx.next_output() == encode_block(1, b"x", crc=False)
    tx2 = XmodemSender(b"x", "crc")
    tx2.receive_bytes(bytes([NAK]))
    tx2.next_output()
    tx2.receive_bytes(bytes([NAK]))  # a NAK answer fixes the mode ...
    assert tx2.next_output() == encode_block(1, b"x", crc=False)
    tx2.receive_bytes(b"C")  # ... and a C then is just another request
    assert tx2.next_output() == encode_block(1, b"x", crc=False)


def test_ymodem_sender_figure_3_sequence() -> None:
    """Forsberg, Figure 3: C, block 0, ACK C, data, EOT NAK EOT ACK, C, null block 0, ACK."""
    data = payload(300)
    tx = YmodemSender([YmodemFile("foo.c", data)], block_size=128)
    tx.receive_bytes(b"C")
    assert tx.next_output()[:9] == bytes([SOH, 0, 0xFF]) + b"foo.c\x00"
    events = tx.receive_bytes(bytes([ACK]) + b"C")
    assert of_type(events, FileStarted) == [FileStarted("foo.c", 300)]
    assert tx.next_output() == encode_block(1, data[:128], crc=True)
    tx.receive_bytes(bytes([ACK]))
    assert tx.next_output() == encode_block(2, data[128:256], crc=True)
    tx.receive_bytes(bytes([ACK]))
    assert tx.next_output() == encode_block(3, data[256:], crc=True)
    tx.receive_bytes(bytes([ACK]))
    assert tx.next_output() == bytes([EOT])
    events = tx.receive_bytes(bytes([NAK]))
    assert tx.next_output() == bytes([EOT]) and not of_type(events, Retry)  # the expected NAK is free
    events = tx.receive_bytes(bytes([ACK]) + b"C")
    assert of_type(events, FileSent) == [FileSent("foo.c", 300)]
    assert tx.next_output() == encode_block(0, b"", crc=True, pad=0)
    events = tx.receive_bytes(bytes([ACK]))
    result = of_type(events, Done)[0].result
    assert result.ok and result.bytes == 300 and result.blocks == 3 and result.retries == 0


def test_ymodem_receiver_naks_first_eot() -> None:
    rx = YmodemReceiver()
    assert rx.next_output() == b"C"
    header = encode_block(0, b"f\x005", crc=True, pad=0)
    events = rx.receive_bytes(header)
    assert rx.next_output() == bytes([ACK]) + b"C"
    assert of_type(events, FileStarted) == [FileStarted("f", 5)]
    events = rx.receive_bytes(encode_block(1, b"hello", crc=True))
    assert rx.next_output() == bytes([ACK])
    assert of_type(events, Progress) == [Progress("f", 1, None, 5, 5)]
    rx.receive_bytes(bytes([EOT]))
    assert rx.next_output() == bytes([NAK])
    events = rx.receive_bytes(bytes([EOT]))
    assert rx.next_output() == bytes([ACK]) + b"C"
    (received,) = of_type(events, FileReceived)
    assert received.file.data == b"hello"
    events = rx.receive_bytes(encode_block(0, b"", crc=True, pad=0))
    assert rx.next_output() == bytes([ACK])
    assert of_type(events, Done)[0].result.files[0].name == "f"


def test_receiver_ignores_a_banner_before_the_first_block() -> None:
    rx = XmodemReceiver("crc")
    rx.next_output()
    rx.receive_bytes(b"loadx\r\n## Ready for binary (xmodem) download\r\n")
    assert rx.next_output() == b""
    rx.receive_bytes(encode_block(1, b"ok", crc=True))
    assert rx.next_output() == bytes([ACK])


def test_noise_between_blocks_is_purged_then_nakked() -> None:
    rx = XmodemReceiver("crc")
    rx.next_output()
    rx.receive_bytes(encode_block(1, b"a", crc=True))
    rx.next_output()
    rx.receive_bytes(b"\x55" + encode_block(2, b"b", crc=True))  # a glitch, then a block: all stale
    assert rx.next_output() == b"" and rx.timeout == 1.0
    events = rx.on_timeout()
    assert rx.next_output() == bytes([NAK])
    assert [e.reason for e in of_type(events, Retry)] == ["unexpected bytes where a block should start"]


def test_out_of_sync_block_cancels() -> None:
    rx = XmodemReceiver("crc")
    rx.next_output()
    rx.receive_bytes(encode_block(1, b"a", crc=True))
    rx.next_output()
    events = rx.receive_bytes(encode_block(3, b"c", crc=True))
    assert rx.next_output() == ABORT_SEQUENCE
    result = of_type(events, Done)[0].result
    assert not result.ok and "block 3 while expecting block 2" in (result.error or "")


def test_xmodem_receiver_rejects_a_ymodem_header() -> None:
    rx = XmodemReceiver("crc")
    events = rx.receive_bytes(encode_block(0, b"name\x0012", crc=True, pad=0))
    assert "block 0 while expecting block 1" in (of_type(events, Done)[0].result.error or "")


def test_max_bytes_cancels() -> None:
    tx = XmodemSender(payload(1000), "crc")
    rx = XmodemReceiver("crc", max_bytes=500)
    sent, received = Link(tx, rx).run()
    assert not received.ok and "500 bytes" in (received.error or "")
    assert sent.cancelled_by == "peer"


def test_xmodem_size_trims_padding() -> None:
    data = payload(300)
    _, received = Link(XmodemSender(data, "crc"), XmodemReceiver("crc", size=300)).run()
    assert received.files[0].data == data and received.bytes == 300


# --- every mode and size, end to end --------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", MODES)
def test_xmodem_round_trip(mode: str, size: int) -> None:
    data = payload(size)
    link = Link(XmodemSender(data, mode), XmodemReceiver(mode))  # type: ignore[arg-type]
    sent, received = link.run()
    assert sent.ok and received.ok and sent.retries == received.retries == 0
    (file,) = received.files
    assert file.data == xmodem_expect(data, mode)  # padding kept: XMODEM has no size
    assert sent.bytes == size and received.bytes == len(file.data)
    assert sent.blocks == received.blocks == len(of_type(link.sender_events, Progress))
    if size:
        last = of_type(link.sender_events, Progress)[-1]
        assert last == Progress(None, sent.blocks, sent.blocks, size, size)
    if mode == "1k" and size > 896:
        assert link.wire_to_receiver[0][0] == STX


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("block_size", [128, 1024])
def test_ymodem_round_trip(size: int, block_size: int) -> None:
    files = [
        YmodemFile("first.bin", payload(size), mtime=1_700_000_000, mode=0o100644),
        YmodemFile("second file.txt", payload(size + 3, salt=5)),
        YmodemFile("empty", b""),
    ]
    link = Link(YmodemSender(files, block_size=block_size), YmodemReceiver())  # type: ignore[arg-type]
    sent, received = link.run()
    assert sent.ok and received.ok
    assert [f.data for f in received.files] == [f.data for f in files]  # trimmed to the size
    assert [f.name for f in received.files] == [f.name for f in files]
    assert received.files[0].mtime == 1_700_000_000 and received.files[0].mode == 0o100644
    assert sent.bytes == received.bytes == sum(len(f.data) for f in files)
    assert of_type(link.receiver_events, FileStarted)[0] == FileStarted(
        "first.bin", size, 1_700_000_000, 0o100644
    )
    assert [e.name for e in of_type(link.sender_events, FileSent)] == [f.name for f in files]


def test_ymodem_empty_batch() -> None:
    sent, received = Link(YmodemSender([]), YmodemReceiver()).run()
    assert sent.ok and received.ok and received.files == () and sent.blocks == 0


def test_ymodem_long_name_uses_a_1k_header() -> None:
    name = "d/" * 80 + "x.bin"
    link = Link(YmodemSender([YmodemFile(name, b"1")]), YmodemReceiver())
    _, received = link.run()
    assert received.files[0].name == name
    assert link.wire_to_receiver[0][0] == STX


# --- injected faults --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("name", "fault"),
    [
        ("flip data", flip(60)),
        ("flip header", flip(1)),
        ("flip start", flip(0)),
        ("drop", drop),
        ("duplicate", duplicate),
    ],
)
def test_xmodem_recovers_from_a_block_fault(mode: str, name: str, fault: Fault) -> None:
    data = payload(5000)
    # writes: block 1, block 2, block 3 (faulty), ...
    link = Link(XmodemSender(data, mode), XmodemReceiver(mode), to_receiver=[keep, keep, fault])  # type: ignore[arg-type]
    sent, received = link.run()
    assert sent.ok and received.ok, (sent, received)
    assert received.files[0].data == xmodem_expect(data, mode)
    assert received.retries >= 1
    if name != "duplicate":
        assert sent.retries >= 1  # the block went out again
    else:
        assert sent.retries == 0  # a duplicate costs the sender nothing


@pytest.mark.parametrize("fault", [drop, garble, duplicate], ids=["drop", "garble", "duplicate"])
def test_xmodem_recovers_from_a_lost_or_garbled_reply(fault: Fault) -> None:
    data = payload(2000)
    # replies: C, ACK 1, ACK 2 (faulty), ...
    link = Link(XmodemSender(data, "crc"), XmodemReceiver("crc"), to_sender=[keep, keep, fault])
    sent, received = link.run()
    assert sent.ok and received.ok
    assert received.files[0].data == xmodem_expect(data, "crc")


def test_ymodem_recovers_from_faults_everywhere() -> None:
    files = [YmodemFile("a", payload(2000)), YmodemFile("b", payload(10, salt=1))]
    faults = [flip(7), drop, keep, duplicate, flip(0), keep, drop, keep, duplicate, flip(3), drop]
    link = Link(
        YmodemSender(files), YmodemReceiver(), to_receiver=list(faults), to_sender=[keep, drop, keep, garble]
    )
    sent, received = link.run()
    assert sent.ok and received.ok, (sent, received)
    assert [f.data for f in received.files] == [f.data for f in files]
    assert received.retries > 0


FORWARD_FAULTS = st.one_of(
    st.just("keep"),
    st.just("keep"),
    st.just("drop"),
    st.just("duplicate"),
    st.just("truncate"),
    st.integers(0, 1100),  # flip the byte at this position (modulo the write's length)
)
BACKWARD_FAULTS = st.sampled_from(["keep", "keep", "drop", "garble", "duplicate"])


def truncate(chunk: bytes) -> bytes:
    return chunk[: len(chunk) // 2]


def make_fault(spec: str | int) -> Fault:
    if isinstance(spec, int):
        return flip(spec)
    return {"keep": keep, "drop": drop, "duplicate": duplicate, "garble": garble, "truncate": truncate}[spec]


def at_most(faults: list[str | int], limit: int) -> list[Fault]:
    """The first ``limit`` faults as given, the rest of the writes untouched."""
    out: list[Fault] = []
    used = 0
    for spec in faults:
        used += spec != "keep"
        out.append(make_fault(spec) if used <= limit else keep)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.sampled_from([*SIZES, 300, 2049]),
    kind=st.sampled_from(["checksum", "crc", "1k", "ymodem"]),
    forward=st.lists(FORWARD_FAULTS, max_size=12),
    backward=st.lists(BACKWARD_FAULTS, max_size=12),
    sender_timers=st.lists(st.booleans(), max_size=20),
)
@pytest.mark.slow
def test_any_few_faults_still_deliver_the_data(
    size: int, kind: str, forward: list[str | int], backward: list[str | int], sender_timers: list[bool]
) -> None:
    """At most 4 faults in each direction: the data arrives intact (XMODEM: plus padding)."""
    data = payload(size)
    sender: Machine
    receiver: Machine
    if kind == "ymodem":
        sender, receiver = YmodemSender([YmodemFile("f", data)]), YmodemReceiver()
    else:
        sender, receiver = XmodemSender(data, kind), XmodemReceiver(kind)  # type: ignore[arg-type]

    def sender_timer(quiet: int) -> bool:
        # Sometimes the sender's timer runs out first, never twice in a row.
        return quiet % 2 == 1 and bool(sender_timers) and sender_timers[quiet % len(sender_timers)]

    link = Link(
        sender,
        receiver,
        to_receiver=at_most(forward, 4),
        to_sender=at_most(backward, 4),
        sender_timer=sender_timer,
    )
    sent, received = link.run()
    if not received.ok and kind in ("crc", "1k") and fell_back_to_checksum(link):
        # Byrns 7.2.2: when every C and the sender's first CRC block were lost, the receiver
        # switches to the checksum while the sender stays in CRC; the spec leaves this unfixed.
        assert not sent.ok and "failed 10 times" in f"{sent.error} {received.error}"
        return
    assert received.ok, (sent, received, forward, backward)
    expected = data if kind == "ymodem" else xmodem_expect(data, kind)
    assert received.files[0].data == expected
    # XMODEM's one blind spot: when the final ACK is lost the receiver has finished and the
    # sender can only say so.
    assert sent.ok or "end of file (EOT) was not" in (sent.error or ""), (sent, forward, backward)
    if kind == "ymodem":
        assert sent.ok


# --- cancellation and retry limits -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["xmodem", "ymodem"])
@pytest.mark.parametrize("side", ["sender", "receiver"])
def test_cancel_from_either_side(kind: str, side: str) -> None:
    data = payload(3000)
    sender: Machine = XmodemSender(data, "crc") if kind == "xmodem" else YmodemSender([YmodemFile("f", data)])
    receiver: Machine = XmodemReceiver("crc") if kind == "xmodem" else YmodemReceiver()
    link = Link(sender, receiver)
    for _ in range(5):
        link.step()
    canceller, other = (sender, receiver) if side == "sender" else (receiver, sender)
    events = canceller.cancel()
    assert canceller.next_output() == ABORT_SEQUENCE
    assert canceller.cancel() == []
    mine = of_type(events, Done)[0].result
    assert mine.cancelled and mine.cancelled_by == "local" and not mine.ok and mine.blocks >= 1
    theirs = other.receive_bytes(ABORT_SEQUENCE)
    result = of_type(theirs, Done)[0].result
    assert result.cancelled and result.cancelled_by == "peer" and not result.ok
    assert "cancelled" in (result.error or "")
    assert other.next_output() == b""  # no reply to an abort
    assert other.receive_bytes(b"C") == [] and other.on_timeout() == []


@pytest.mark.parametrize("kind", ["xmodem", "ymodem"])
@pytest.mark.parametrize("side", ["sender", "receiver"])
def test_a_peer_that_goes_away_is_not_a_cancel_from_here(kind: str, side: str) -> None:
    data = payload(3000)
    sender: Machine = XmodemSender(data, "crc") if kind == "xmodem" else YmodemSender([YmodemFile("f", data)])
    receiver: Machine = XmodemReceiver("crc") if kind == "xmodem" else YmodemReceiver()
    link = Link(sender, receiver)
    for _ in range(5):
        link.step()
    left_behind = sender if side == "sender" else receiver
    events = left_behind.peer_gone()
    result = of_type(events, Done)[0].result
    assert not result.ok and not result.cancelled and result.cancelled_by is None
    assert result.error == messages.XMODEM_PEER_GONE.format(blocks=result.blocks)
    assert result.error != messages.XMODEM_CANCELLED_LOCAL
    assert left_behind.next_output() == b""  # no abort into a port that is gone
    assert left_behind.done and left_behind.peer_gone() == [] and left_behind.cancel() == []


def test_single_can_is_line_noise() -> None:
    tx = XmodemSender(b"abc", "crc")
    tx.receive_bytes(b"C")
    tx.next_output()
    assert not of_type(tx.receive_bytes(bytes([CAN])), Done)
    tx.receive_bytes(bytes([ACK]))
    assert tx.next_output() == bytes([EOT])


def test_can_can_during_the_start() -> None:
    rx = XmodemReceiver("crc")
    rx.next_output()
    events = rx.receive_bytes(bytes([CAN, CAN]))
    assert of_type(events, Done)[0].result.cancelled_by == "peer"


def test_receiver_gives_up_after_retries() -> None:
    data = payload(1000)
    always_bad = [keep] + [flip(60)] * 50
    link = Link(XmodemSender(data, "crc"), XmodemReceiver("crc"), to_receiver=always_bad)
    sent, received = link.run()
    assert not received.ok and "block 2 failed 10 times in a row" in (received.error or "")
    assert "checksum/CRC mismatch" in (received.error or "")
    assert len(of_type(link.receiver_events, Retry)) == 10 and received.retries == 10
    assert sent.cancelled_by == "peer"  # the receiver's abort reached the sender


def test_sender_gives_up_when_every_answer_is_nak() -> None:
    tx = XmodemSender(b"abc", "crc", max_retries=3)
    tx.receive_bytes(b"C")
    for _ in range(3):
        tx.next_output()
        assert not of_type(tx.receive_bytes(bytes([NAK])), Done)
    events = tx.receive_bytes(bytes([NAK]))
    result = of_type(events, Done)[0].result
    assert not result.ok and result.retries == 3 and "block 1 failed 3 times" in (result.error or "")
    assert tx.next_output() == ABORT_SEQUENCE


def test_sender_gives_up_on_a_mute_receiver() -> None:
    tx = XmodemSender(b"abc", "crc")
    tx.receive_bytes(b"C")
    assert tx.timeout == 15.0
    events: list[Event] = []
    for _ in range(11):
        events += tx.on_timeout()
    assert len(of_type(events, Retry)) == 10
    assert not tx.result or "no answer in time" in (tx.result.error or "")
    assert tx.result is not None and not tx.result.ok


def test_no_start_on_either_side() -> None:
    tx = XmodemSender(b"abc")
    for _ in range(6):
        tx.on_timeout()
    assert tx.result is not None and "never asked for data" in (tx.result.error or "")
    rx = YmodemReceiver(start_retries=4)
    for _ in range(4):
        rx.on_timeout()
    assert rx.next_output() == ABORT_SEQUENCE
    assert rx.result is not None and "no block arrived after 4 requests" in (rx.result.error or "")


def test_ymodem_batch_end_unanswered_still_ok() -> None:
    """Some receivers stop after the last file without acknowledging the empty block 0."""
    tx = YmodemSender([YmodemFile("a", b"1")], max_retries=2)
    tx.receive_bytes(b"C")
    tx.receive_bytes(bytes([ACK]) + b"C")
    tx.receive_bytes(bytes([ACK]))
    tx.receive_bytes(bytes([ACK]))
    tx.receive_bytes(bytes([ACK]) + b"C")  # EOT acknowledged, next header requested
    for _ in range(3):
        tx.on_timeout()
    assert tx.result is not None and tx.result.ok and tx.result.files[0].name == "a"


# --- arguments ---------------------------------------------------------------------------------------


def test_bad_arguments() -> None:
    with pytest.raises(InvalidArgument, match="mode 'zmodem' is not known"):
        XmodemSender(b"", "zmodem")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="mode"):
        XmodemReceiver("crc16")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="max_retries"):
        XmodemReceiver(max_retries=0)
    with pytest.raises(InvalidArgument, match="file name"):
        YmodemSender([YmodemFile("", b"")])
    with pytest.raises(InvalidArgument, match="file name"):
        YmodemSender([YmodemFile("a\x00b", b"")])
    with pytest.raises(InvalidArgument, match="1024-byte header"):
        YmodemSender([YmodemFile("n" * 1100, b"")])
    with pytest.raises(InvalidArgument, match="block_size"):
        YmodemSender([], block_size=512)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["crc", "ymodem"])
def test_block_numbers_wrap_past_255(kind: str) -> None:
    """Christensen: the block number wraps 0xFF -> 0x00 (not to 0x01); 300 blocks cross it."""
    data = payload(300 * 128 + 5)
    if kind == "ymodem":
        link = Link(YmodemSender([YmodemFile("big", data)], block_size=128), YmodemReceiver())
    else:
        link = Link(XmodemSender(data, "crc"), XmodemReceiver("crc", size=len(data)))
    sent, received = link.run()
    assert sent.ok and received.ok and received.files[0].data == data
    assert sent.blocks == 301
    numbers = [chunk[1] for chunk in link.wire_to_receiver if chunk[0] == SOH]
    first = 0 if kind == "crc" else 1  # YMODEM's block 0 header comes first
    assert numbers[first + 254 : first + 257] == [255, 0, 1]


def test_start_retries_is_checked() -> None:
    with pytest.raises(InvalidArgument, match="start_retries"):
        XmodemSender(b"", start_retries=0)
