"""XMODEM and YMODEM file transfer as sans-IO state machines (bytes in; events and bytes out).

Written against the published specifications, in Chuck Forsberg's compendium
"XMODEM/YMODEM Protocol Reference" (Omen Technology, 1985/1988; ``YMODEM.TXT``), which holds:

* Ward Christensen, "XMODEM Protocol Overview" (1982): ``SOH blk ~blk data[128] sum``,
  block numbers from 1 wrapping 0xFF -> 0x00, ACK/NAK, EOT, 10 retries, the receiver's
  10-second NAK timeout and 1-second in-block timeout, "purge" before a NAK;
* John Byrns, "XMODEM/CRC Overview" (1985): the receiver asks for CRC-16 with ``C``
  (resent every 3 seconds, falling back to NAK and the checksum), CRC sent high byte
  first; the CRC is CRC-16/XMODEM (poly 0x1021, init 0), computed by ``core.checksums``;
* Forsberg's extensions: 1024-byte blocks introduced by STX (mixable with 128-byte ones),
  graceful abort by two consecutive CAN, and YMODEM batch: block 0 carries
  ``name NUL size [mtime [mode]]`` (decimal size, octal fields, the rest NUL), each file
  ends ``EOT`` / ``NAK`` / ``EOT`` / ``ACK``, and an all-NUL block 0 ends the batch.

There is a ``xmodem`` package on PyPI, but its API is blocking (``getc``/``putc``
callbacks with ``time.sleep``) and it has no YMODEM, so it would need a thread per
transfer and still not cover the issue; these machines own no I/O and no clock instead.

Driving a machine: write ``next_output()`` to the port, read with ``timeout`` seconds as
the deadline, pass what arrives to ``receive_bytes`` or, if nothing came in time, call
``on_timeout()``; repeat until a :class:`Done` event (``done`` is then True). Each call
returns the events it caused: :class:`Progress` after every acknowledged block,
:class:`Retry` for every retransmission or rejected block, :class:`FileStarted` /
:class:`FileSent` / :class:`FileReceived` around YMODEM files, and :class:`Done` with the
:class:`TransferResult`. ``cancel()`` aborts from this side (CAN x5 and BS x5, as YAM
does); two consecutive CAN from the peer abort from the other side.

Decisions where the specifications leave room:

* The sender follows the receiver's handshake for the check (``C`` -> CRC-16, NAK ->
  checksum); ``mode`` picks the block size ("checksum"/"crc": 128, "1k": 1024). A 1k sender
  facing a checksum receiver falls back to 128-byte blocks. In 1k mode the tail goes in
  128-byte blocks once 896 bytes or fewer remain, so padding stays under 128 bytes.
* Padding: the last block is padded with 0x1A (CPMEOF). YMODEM receivers trim to the size
  in block 0. XMODEM has no size, and a trailing 0x1A may be real data in a binary file, so
  :class:`XmodemReceiver` keeps the padding unless told the ``size``.
* An empty XMODEM transfer is a bare EOT; an empty YMODEM file has block 0 and an EOT.
* The XMODEM receiver ACKs the first EOT (Christensen); the YMODEM receiver NAKs the first
  and ACKs the second, as in Forsberg's batch session figure, so a line hit that looks
  like EOT cannot truncate a file. Both senders resend EOT on anything but ACK.
* Purge: bytes that arrived after a bad block or a reply that was already answered are
  stale, so the rest of that chunk is dropped; noise where a block should start drops
  everything until the next timeout, then NAKs (the spec's "wait for the line to clear").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from serial_mcp import messages
from serial_mcp.core.checksums import compute
from serial_mcp.errors import InvalidArgument

__all__ = [
    "ACK",
    "CAN",
    "CRC_REQUEST",
    "EOT",
    "NAK",
    "PAD",
    "SOH",
    "STX",
    "Done",
    "Event",
    "FileReceived",
    "FileSent",
    "FileStarted",
    "Mode",
    "Progress",
    "Retry",
    "TransferResult",
    "TransferredFile",
    "XmodemReceiver",
    "XmodemSender",
    "YmodemFile",
    "YmodemReceiver",
    "YmodemSender",
    "encode_block",
    "parse_header",
]

SOH: Final = 0x01
STX: Final = 0x02
EOT: Final = 0x04
ACK: Final = 0x06
BS: Final = 0x08
NAK: Final = 0x15
CAN: Final = 0x18
PAD: Final = 0x1A
CRC_REQUEST: Final = 0x43  # "C"

#: What cancel() sends: five CAN, then five backspaces to erase them from a shell's input
#: line in case the peer had already left the transfer (Forsberg, "Graceful Abort").
ABORT_SEQUENCE: Final = bytes([CAN] * 5 + [BS] * 5)

#: Per-block retry limit (Christensen: "All errors are retried 10 times").
MAX_RETRIES: Final = 10
#: Seconds a receiver waits for a block before it NAKs again (Christensen).
BLOCK_TIMEOUT: Final = 10.0
#: Seconds a sender waits for an answer to a block before it sends it again: longer than the
#: receiver's BLOCK_TIMEOUT, so a live receiver's NAK drives retries (Christensen suggests a
#: receiver-driven protocol) and the sender's timer only matters when the receiver is mute.
SENDER_TIMEOUT: Final = 15.0
#: Seconds between a receiver's ``C`` requests before it falls back to NAK (Byrns).
CRC_REQUEST_TIMEOUT: Final = 3.0
#: Seconds a receiver waits for the rest of a block once it started (Christensen).
CHARACTER_TIMEOUT: Final = 1.0
#: Unanswered ``C`` requests before an XMODEM receiver falls back to checksum mode.
CRC_ATTEMPTS: Final = 3
#: A sender waits this many timeouts (of BLOCK_TIMEOUT) for the receiver's first request.
SENDER_START_RETRIES: Final = 6
#: A receiver sends this many start requests (C or NAK) before giving up.
RECEIVER_START_RETRIES: Final = 20

Mode = Literal["checksum", "crc", "1k"]
_MODES: Final = ("checksum", "crc", "1k")


# --- events and results ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransferredFile:
    """One file of a transfer: ``data`` is filled on the receiving side only."""

    name: str | None
    size: int
    data: bytes = b""
    declared_size: int | None = None
    mtime: int | None = None
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class TransferResult:
    """How a transfer ended: ``bytes`` of file data and data ``blocks`` that got through."""

    ok: bool
    bytes: int
    blocks: int
    retries: int
    cancelled: bool = False
    cancelled_by: Literal["local", "peer"] | None = None
    error: str | None = None
    files: tuple[TransferredFile, ...] = ()


@dataclass(frozen=True, slots=True)
class Progress:
    """A data block was acknowledged (sender) or accepted (receiver).

    ``block`` counts this file's data blocks; ``blocks`` is their total where known (the
    sender knows, a receiver does not: block sizes may change). ``bytes`` counts file data,
    without padding where the size is known.
    """

    file: str | None
    block: int
    blocks: int | None
    bytes: int
    total_bytes: int | None


@dataclass(frozen=True, slots=True)
class Retry:
    """A block (0 is a YMODEM header, -1 the EOT) was rejected or sent again, and why."""

    block: int
    reason: str
    attempt: int


@dataclass(frozen=True, slots=True)
class FileStarted:
    """A YMODEM file's block 0 was acknowledged."""

    name: str
    size: int | None
    mtime: int | None = None
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class FileSent:
    """The receiver acknowledged the end of a file."""

    name: str | None
    size: int


@dataclass(frozen=True, slots=True)
class FileReceived:
    """A whole file arrived (padding removed where the size is known)."""

    file: TransferredFile


@dataclass(frozen=True, slots=True)
class Done:
    """The transfer is over, successfully or not; no more output follows except for cancel."""

    result: TransferResult


Event = Progress | Retry | FileStarted | FileSent | FileReceived | Done


# --- blocks ---------------------------------------------------------------------------------------


def _check(payload: bytes, crc: bool) -> bytes:
    """The block check: CRC-16/XMODEM high byte first, or the 8-bit arithmetic sum."""
    if crc:
        return compute("crc16_xmodem", payload).to_bytes(2, "big")
    return bytes([sum(payload) & 0xFF])


def encode_block(number: int, payload: bytes, *, crc: bool, size: int = 128, pad: int = PAD) -> bytes:
    """One block on the wire: SOH/STX, number, its complement, ``payload`` padded to ``size``, check."""
    body = payload.ljust(size, bytes([pad]))
    number &= 0xFF
    return bytes([SOH if size == 128 else STX, number, 0xFF - number]) + body + _check(body, crc)


def _header_payload(file: YmodemFile) -> bytes:
    """YMODEM block 0 contents: ``name NUL size [mtime [mode]]`` (octal fields), NUL-padded."""
    fields = [str(len(file.data))]
    if file.mtime is not None or file.mode is not None:
        fields.append(format(file.mtime or 0, "o"))
    if file.mode is not None:
        fields.append(format(file.mode, "o"))
    return file.name.encode("utf-8") + b"\x00" + " ".join(fields).encode("ascii")


def parse_header(payload: bytes) -> TransferredFile | None:
    """The file described by a YMODEM block 0, or None for the empty name that ends a batch.

    Only the name is required; size, mtime and mode are read leniently (a field that does
    not parse is left out, as are the ones after it).
    """
    name, _, rest = payload.partition(b"\x00")
    if not name:
        return None
    fields = rest.split(b"\x00", 1)[0].split()
    values: list[int] = []
    for base, field in zip((10, 8, 8), fields, strict=False):
        try:
            values.append(int(field, base))
        except ValueError:
            break
    size, mtime, mode = (*values, None, None, None)[:3]
    text = name.decode("utf-8", errors="replace")
    return TransferredFile(text, 0, b"", size, mtime, mode)


@dataclass(frozen=True, slots=True)
class YmodemFile:
    """A file for :class:`YmodemSender`: its name (no directory needed), contents and metadata."""

    name: str
    data: bytes
    mtime: int | None = None
    mode: int | None = None


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        text = messages.XMODEM_BAD_MODE.format(value=mode, allowed=", ".join(_MODES))
        raise InvalidArgument(text, mode=mode)


def _check_retries(field: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(messages.XMODEM_BAD_RETRIES.format(field=field, value=value))


# --- shared machinery -----------------------------------------------------------------------------


class _Machine:
    """Output buffer, counters, CAN detection and the end of a transfer."""

    def __init__(self, max_retries: int, start_retries: int) -> None:
        _check_retries("max_retries", max_retries)
        _check_retries("start_retries", start_retries)
        self.max_retries = max_retries
        self._start_retries = start_retries
        #: Seconds to wait for input before calling on_timeout(); changes with the state.
        self.timeout = BLOCK_TIMEOUT
        self._out = bytearray()
        self._result: TransferResult | None = None
        self._retries = 0
        self._errors = 0  # consecutive errors on the current step
        self._blocks = 0
        self._bytes = 0
        self._files: list[TransferredFile] = []
        self._can = False  # last byte seen where a control was expected was CAN

    @property
    def done(self) -> bool:
        """True once a :class:`Done` event was returned."""
        return self._result is not None

    @property
    def result(self) -> TransferResult | None:
        """The final result, once done."""
        return self._result

    def next_output(self) -> bytes:
        """Bytes to write to the port now (and forget); empty when there is nothing to send."""
        out = bytes(self._out)
        self._out.clear()
        return out

    def cancel(self) -> list[Event]:
        """Abort from this side: queue CAN x5 + BS x5 and end the transfer as cancelled."""
        if self._result is not None:
            return []
        self._out[:] = ABORT_SEQUENCE  # anything not yet written is not sent
        return [self._finish(False, messages.XMODEM_CANCELLED_LOCAL, cancelled_by="local")]

    def _finish(
        self, ok: bool, error: str | None = None, cancelled_by: Literal["local", "peer"] | None = None
    ) -> Done:
        self._result = TransferResult(
            ok=ok,
            bytes=self._bytes,
            blocks=self._blocks,
            retries=self._retries,
            cancelled=cancelled_by is not None,
            cancelled_by=cancelled_by,
            error=error,
            files=tuple(self._files),
        )
        return Done(self._result)

    def _fail(self, error: str) -> Done:
        """End with an error, telling the peer with the abort sequence (instead of any unsent reply)."""
        self._out[:] = ABORT_SEQUENCE
        return self._finish(False, error)

    def _give_up_message(self, block: int, reason: str) -> str:
        limit = self.max_retries
        return messages.XMODEM_TOO_MANY_RETRIES.format(block=block, retries=limit, reason=reason)

    def _saw_cancel(self, byte: int) -> bool:
        """Track CAN bytes; True on the second consecutive one (the peer aborted)."""
        if byte == CAN:
            if self._can:
                return True
            self._can = True
        else:
            self._can = False
        return False

    def _peer_cancelled(self) -> Done:
        self._out.clear()  # the peer has left: nothing unsent is worth sending
        return self._finish(False, messages.XMODEM_CANCELLED_PEER, cancelled_by="peer")

    def _error(self, block: int, reason: str, events: list[Event]) -> bool:
        """Count one error on the current step; False (and Done queued) when retries are exhausted."""
        self._errors += 1
        if self._errors > self.max_retries:
            events.append(self._fail(self._give_up_message(block, reason)))
            return False
        self._retries += 1
        events.append(Retry(block, reason, self._errors))
        return True


# --- sender ---------------------------------------------------------------------------------------

_S_START, _S_WAIT_ACK, _S_WAIT_C = range(3)
_K_BLOCK, _K_EOT, _K_HEADER, _K_END = range(4)


class _Sender(_Machine):
    """Sends files block by block, resending on NAK or timeout (XMODEM alone, or YMODEM batch)."""

    def __init__(
        self,
        files: Sequence[YmodemFile | bytes],
        block_size: int,
        batch: bool,
        max_retries: int,
        start_retries: int,
    ) -> None:
        super().__init__(max_retries, start_retries)
        self._batch = batch
        self._queue = list(files)
        self._block_size = block_size
        self._crc = True
        self._acked_any = False
        self._answered = False  # Byrns: a C switches to CRC only before the first NAK or ACK
        self._state = _S_START
        self._kind = _K_BLOCK
        self._packet = b""
        self._file_index = 0
        self._plan: list[tuple[int, int]] = []  # (offset, size) of each block of the current file
        self._step = 0  # index into _plan of the block awaiting its ACK
        self._eot_naks = 0

    # file helpers
    def _current(self) -> YmodemFile | bytes:
        return self._queue[self._file_index]

    def _data(self) -> bytes:
        file = self._current()
        return file if isinstance(file, bytes) else file.data

    def _name(self) -> str | None:
        file = self._current()
        return None if isinstance(file, bytes) else file.name

    def _make_plan(self) -> None:
        """Cut the current file into blocks: 1024 while more than 896 bytes remain, then 128."""
        size = len(self._data())
        big = self._block_size == 1024 and self._crc
        plan: list[tuple[int, int]] = []
        offset = 0
        while offset < size:
            block = 1024 if big and size - offset > 896 else 128
            plan.append((offset, block))
            offset += block
        self._plan = plan

    # sending
    def _send(self, kind: int, packet: bytes) -> None:
        self._kind = kind
        self._packet = packet
        self._state = _S_WAIT_ACK
        self._errors = 0
        self._eot_naks = 0
        self._out += packet
        self.timeout = SENDER_TIMEOUT

    def _send_block(self) -> None:
        offset, size = self._plan[self._step]
        payload = self._data()[offset : offset + size]
        self._send(_K_BLOCK, encode_block(self._step + 1, payload, crc=self._crc, size=size))

    def _send_data_or_eot(self) -> None:
        self._step = 0
        self._make_plan()
        if self._plan:
            self._send_block()
        else:
            self._send(_K_EOT, bytes([EOT]))

    def _send_header_or_end(self) -> None:
        if self._file_index < len(self._queue):
            file = self._current()
            assert isinstance(file, YmodemFile)
            payload = _header_payload(file)
            size = 128 if len(payload) <= 128 else 1024
            self._send(_K_HEADER, encode_block(0, payload, crc=True, size=size, pad=0))
        else:
            self._send(_K_END, encode_block(0, b"", crc=True, size=128, pad=0))

    def _resend(self) -> None:
        self._out += self._packet

    # input
    def receive_bytes(self, data: bytes) -> list[Event]:
        """Handle the receiver's replies; returns the events they caused."""
        events: list[Event] = []
        for i, byte in enumerate(data):
            if self._result is not None:
                break
            if self._saw_cancel(byte):
                events.append(self._peer_cancelled())
                break
            queued = len(self._out)
            self._on_byte(byte, events)
            if len(self._out) > queued:
                # New output answers this byte; what else arrived with it is stale (purge),
                # except an abort, which must not be missed.
                if self._result is None and bytes([CAN, CAN]) in data[i + 1 :]:
                    events.append(self._peer_cancelled())
                break
        return events

    def _on_byte(self, byte: int, events: list[Event]) -> None:
        """One reply byte from the receiver."""
        if self._state == _S_START:
            if byte == CRC_REQUEST or (byte == NAK and not self._batch):
                self._crc = byte == CRC_REQUEST
                if self._batch:
                    self._send_header_or_end()
                else:
                    self._send_data_or_eot()
        elif self._state == _S_WAIT_C:
            if self._kind == _K_HEADER and byte in (CRC_REQUEST, NAK):
                self._send_data_or_eot()  # a NAK here: the receiver's C was lost, it wants block 1
            elif byte == CRC_REQUEST:
                self._send_header_or_end()
        elif byte == ACK:
            self._answered = True
            self._on_ack(events)
        elif byte == NAK or (byte == CRC_REQUEST and self._c_means_nak()):
            if byte == CRC_REQUEST and not self._answered and not self._crc:
                self._crc = True  # a late C before any NAK/ACK: switch to CRC (Byrns 7.2.3)
                self._send_data_or_eot()
            elif self._kind == _K_EOT and self._eot_naks == 0:
                self._eot_naks = 1  # YMODEM receivers NAK the first EOT on purpose
                self._resend()
            elif self._error(self._block_label(), messages.XMODEM_REASON_NAK, events):
                self._resend()
            self._answered = self._answered or byte == NAK

    def _c_means_nak(self) -> bool:
        """A C repeats the request before the first ACK (Byrns); in YMODEM also when the
        receiver waits for a header, i.e. it never saw this header or our EOT."""
        return not self._acked_any or (self._batch and self._kind != _K_BLOCK)

    def _give_up_message(self, block: int, reason: str) -> str:
        if self._kind == _K_EOT and self._state == _S_WAIT_ACK:
            return messages.XMODEM_EOT_UNANSWERED.format(tries=self.max_retries + 1)
        return super()._give_up_message(block, reason)

    def _block_label(self) -> int:
        return {_K_BLOCK: self._step + 1, _K_EOT: -1}.get(self._kind, 0)

    def _on_ack(self, events: list[Event]) -> None:
        self._acked_any = True
        self._errors = 0
        kind = self._kind
        if kind == _K_BLOCK:
            offset, size = self._plan[self._step]
            data = self._data()
            sent = min(size, len(data) - offset)
            self._blocks += 1
            self._bytes += sent
            self._step += 1
            events.append(Progress(self._name(), self._step, len(self._plan), offset + sent, len(data)))
            if self._step < len(self._plan):
                self._send_block()
            else:
                self._send(_K_EOT, bytes([EOT]))
        elif kind == _K_EOT:
            name = self._name()
            size = len(self._data())
            self._files.append(TransferredFile(name, size))
            events.append(FileSent(name, size))
            self._file_index += 1
            if self._batch:
                self._state = _S_WAIT_C  # for the C that asks for the next header
            else:
                events.append(self._finish(True))
        elif kind == _K_HEADER:
            file = self._current()
            assert isinstance(file, YmodemFile)
            events.append(FileStarted(file.name, len(file.data), file.mtime, file.mode))
            self._state = _S_WAIT_C
        else:  # _K_END
            events.append(self._finish(True))

    def on_timeout(self) -> list[Event]:
        """Nothing arrived within ``timeout`` seconds: resend, or give up after the retry limit."""
        events: list[Event] = []
        if self._result is not None:
            return events
        self._can = False
        if self._state == _S_START:
            self._errors += 1
            if self._errors >= self._start_retries:
                events.append(self._fail(messages.XMODEM_NO_START.format(tries=self._errors)))
            return events
        if self._state == _S_WAIT_C:
            if not self._error(self._block_label(), messages.XMODEM_REASON_NO_REQUEST, events):
                self._end_batch_anyway(events)
            return events
        if self._error(self._block_label(), messages.XMODEM_REASON_TIMEOUT, events):
            self._resend()
        else:
            self._end_batch_anyway(events)
        return events

    def _end_batch_anyway(self, events: list[Event]) -> None:
        """Every file got through but the batch end went unanswered: some receivers just stop."""
        if self._batch and self._file_index == len(self._queue) and self._kind in (_K_END, _K_EOT):
            self._out.clear()
            events[-1] = self._finish(True)


class XmodemSender(_Sender):
    """Sends one byte string with XMODEM ("checksum"/"crc": 128-byte blocks, "1k": 1024).

    The check (checksum or CRC-16) is whatever the receiver asks for with its first NAK or C.
    """

    def __init__(
        self,
        data: bytes,
        mode: Mode = "crc",
        *,
        max_retries: int = MAX_RETRIES,
        start_retries: int = SENDER_START_RETRIES,
    ) -> None:
        _check_mode(mode)
        super().__init__([bytes(data)], 1024 if mode == "1k" else 128, False, max_retries, start_retries)


class YmodemSender(_Sender):
    """Sends a batch of files with YMODEM (CRC-16, 1024-byte blocks unless ``block_size=128``)."""

    def __init__(
        self,
        files: Sequence[YmodemFile],
        *,
        block_size: Literal[128, 1024] = 1024,
        max_retries: int = MAX_RETRIES,
        start_retries: int = SENDER_START_RETRIES,
    ) -> None:
        if block_size not in (128, 1024):
            raise InvalidArgument(messages.XMODEM_BAD_BLOCK_SIZE.format(value=block_size))
        for file in files:
            if not file.name or "\x00" in file.name:
                raise InvalidArgument(messages.XMODEM_BAD_NAME.format(name=file.name), name=file.name)
            if len(_header_payload(file)) > 1024:
                raise InvalidArgument(messages.XMODEM_NAME_TOO_LONG.format(name=file.name), name=file.name)
        super().__init__(list(files), block_size, True, max_retries, start_retries)


# --- receiver -------------------------------------------------------------------------------------

_R_START, _R_WAIT, _R_BLOCK, _R_PURGE = range(4)


class _Receiver(_Machine):
    """Requests, checks and acknowledges blocks (XMODEM alone, or YMODEM batch)."""

    def __init__(
        self,
        crc: bool,
        batch: bool,
        size: int | None,
        max_bytes: int | None,
        max_retries: int,
        start_retries: int,
    ) -> None:
        super().__init__(max_retries, start_retries)
        self._crc = crc
        self._batch = batch
        self._size = size
        self._max_bytes = max_bytes
        self._starts = 1
        self._state = _R_START
        self._buf = bytearray()
        self._need = 0
        self._expect_header = batch
        self._expected = 0 if batch else 1
        self._last: int | None = None
        self._data = bytearray()
        self._header: TransferredFile | None = None
        self._file_blocks = 0
        self._eot_nakked = False
        self._request()

    # output helpers
    def _request(self) -> None:
        """The start request: C for CRC-16, NAK for the checksum."""
        self._out.append(CRC_REQUEST if self._crc else NAK)
        self.timeout = CRC_REQUEST_TIMEOUT if self._crc else BLOCK_TIMEOUT

    def _wait(self) -> None:
        self._state = _R_WAIT
        self.timeout = BLOCK_TIMEOUT

    def _nak(self) -> None:
        self._out.append(CRC_REQUEST if self._expect_header else NAK)
        self._wait()

    # input
    def receive_bytes(self, data: bytes) -> list[Event]:
        """Handle the sender's bytes; returns the events they caused."""
        events: list[Event] = []
        i = 0
        n = len(data)
        while i < n and self._result is None:
            if self._state == _R_BLOCK:
                take = min(self._need - len(self._buf), n - i)
                self._buf += data[i : i + take]
                i += take
                if len(self._buf) == self._need and not self._on_block(bytes(self._buf), events):
                    break  # the block was rejected: the rest of this chunk is stale
                continue
            byte = data[i]
            i += 1
            if self._state == _R_PURGE:
                if self._saw_cancel(byte):
                    events.append(self._peer_cancelled())
                continue
            if self._saw_cancel(byte):
                events.append(self._peer_cancelled())
                break
            if byte in (SOH, STX):
                self._state = _R_BLOCK
                self._buf = bytearray([byte])
                self._need = (128 if byte == SOH else 1024) + (5 if self._crc else 4)
                self.timeout = CHARACTER_TIMEOUT
            elif byte == EOT:
                self._on_eot(events)
            elif byte != CAN and self._state == _R_WAIT:
                self._state = _R_PURGE  # noise where a block should start
                self.timeout = CHARACTER_TIMEOUT
            # Before the first block, stray bytes (a banner, the echoed command) are ignored.
        return events

    def _reject(self, reason: str, events: list[Event]) -> bool:
        """NAK a bad block (or give up); always False: the rest of the chunk is stale."""
        if self._error(self._expected, reason, events):
            self._nak()
        return False

    def _on_block(self, block: bytes, events: list[Event]) -> bool:
        """A complete block arrived; True when it was acknowledged."""
        self._wait()
        number, complement = block[1], block[2]
        payload = block[3 : 3 + (128 if block[0] == SOH else 1024)]
        if number ^ complement != 0xFF:
            return self._reject(messages.XMODEM_REASON_BAD_NUMBER, events)
        if block[3 + len(payload) :] != _check(payload, self._crc):
            return self._reject(messages.XMODEM_REASON_BAD_CHECK, events)
        self._eot_nakked = False
        if self._expect_header:
            if number != 0:
                events.append(self._fail(messages.XMODEM_OUT_OF_SYNC.format(got=number, expected=0)))
                return False
            self._on_header(payload, events)
            return True
        if number == self._expected:
            self._accept(number, payload, events)
            return True
        if number == self._last:  # our ACK was lost and the sender repeated the block
            self._retries += 1
            events.append(Retry(number, messages.XMODEM_REASON_DUPLICATE, 1))
            self._out.append(ACK)
            if self._batch and number == 0 and self._file_blocks == 0:
                self._out.append(CRC_REQUEST)  # a repeated header: ask for the data again
            return True
        events.append(self._fail(messages.XMODEM_OUT_OF_SYNC.format(got=number, expected=self._expected)))
        return False

    def _on_header(self, payload: bytes, events: list[Event]) -> None:
        header = parse_header(payload)
        self._out.append(ACK)
        self._errors = 0
        if header is None:  # the empty block 0 ends the batch
            events.append(self._finish(True))
            return
        self._header = header
        self._expect_header = False
        self._last = 0
        self._expected = 1
        self._file_blocks = 0
        self._data.clear()
        assert header.name is not None
        events.append(FileStarted(header.name, header.declared_size, header.mtime, header.mode))
        self._out.append(CRC_REQUEST)

    def _accept(self, number: int, payload: bytes, events: list[Event]) -> None:
        self._out.append(ACK)
        self._errors = 0
        self._last = number
        self._expected = (number + 1) & 0xFF
        self._data += payload
        self._file_blocks += 1
        self._blocks += 1
        total = self._total()
        done = len(self._data) if total is None else min(len(self._data), total)
        events.append(Progress(self._file_name(), self._file_blocks, None, done, total))
        if self._max_bytes is not None and self._bytes + len(self._data) > self._max_bytes:
            events.append(self._fail(messages.XMODEM_TOO_LARGE.format(limit=self._max_bytes)))

    def _file_name(self) -> str | None:
        return self._header.name if self._header else None

    def _total(self) -> int | None:
        return self._header.declared_size if self._header else self._size

    def _on_eot(self, events: list[Event]) -> None:
        if self._batch:
            if self._expect_header:  # our ACK of the last EOT was lost
                self._out += bytes([ACK, CRC_REQUEST])
                self._wait()
                return
            if not self._eot_nakked:
                self._eot_nakked = True
                self._out.append(NAK)
                self._wait()
                return
        self._out.append(ACK)
        self._complete_file(events)
        if self._batch:
            self._expect_header = True
            self._expected = 0
            self._eot_nakked = False
            self._out.append(CRC_REQUEST)
            self._wait()
        else:
            events.append(self._finish(True))

    def _complete_file(self, events: list[Event]) -> None:
        data = bytes(self._data)
        total = self._total()
        if total is not None:
            data = data[:total]
        header = self._header
        file = TransferredFile(
            header.name if header else None,
            len(data),
            data,
            total,
            header.mtime if header else None,
            header.mode if header else None,
        )
        self._files.append(file)
        self._bytes += len(data)
        self._data.clear()
        self._header = None
        events.append(FileReceived(file))

    def on_timeout(self) -> list[Event]:
        """Nothing arrived within ``timeout`` seconds: ask again, or give up after the retry limit."""
        events: list[Event] = []
        if self._result is not None:
            return events
        self._can = False
        if self._state == _R_START:
            self._starts += 1
            if self._starts > self._start_retries:
                events.append(self._fail(messages.XMODEM_NO_SENDER.format(tries=self._start_retries)))
                return events
            if self._crc and not self._batch and self._starts > CRC_ATTEMPTS:
                self._crc = False  # Byrns: the sender may not know CRC; fall back to the checksum
            self._request()
            return events
        reason = {
            _R_BLOCK: messages.XMODEM_REASON_SHORT,
            _R_PURGE: messages.XMODEM_REASON_NOISE,
        }.get(self._state, messages.XMODEM_REASON_TIMEOUT)
        self._buf.clear()
        if self._error(self._expected, reason, events):
            self._nak()
        return events


class XmodemReceiver(_Receiver):
    """Receives one file with XMODEM; "crc" and "1k" ask for CRC-16 (falling back to the
    checksum after 3 unanswered requests), "checksum" asks for the checksum.

    Blocks of 128 and 1024 bytes are both accepted. The data keeps the sender's 0x1A
    padding unless ``size`` is given; ``max_bytes`` cancels a transfer that grows past it.
    """

    def __init__(
        self,
        mode: Mode = "crc",
        *,
        size: int | None = None,
        max_bytes: int | None = None,
        max_retries: int = MAX_RETRIES,
        start_retries: int = RECEIVER_START_RETRIES,
    ) -> None:
        _check_mode(mode)
        super().__init__(mode != "checksum", False, size, max_bytes, max_retries, start_retries)


class YmodemReceiver(_Receiver):
    """Receives a YMODEM batch; each file is trimmed to the size in its block 0.

    File names come from the peer: sanitise them before using them as paths.
    """

    def __init__(
        self,
        *,
        max_bytes: int | None = None,
        max_retries: int = MAX_RETRIES,
        start_retries: int = RECEIVER_START_RETRIES,
    ) -> None:
        super().__init__(True, True, None, max_bytes, max_retries, start_retries)
