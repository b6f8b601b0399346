"""The XMODEM and YMODEM senders: cut files into blocks, follow the receiver's handshake for the
check, resend on NAK or timeout, and end the YMODEM batch (sans-IO; see ``core.xmodem``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from serial_mcp import messages
from serial_mcp.core.xmodem_machine import TransferMachine
from serial_mcp.core.xmodem_wire import (
    ACK,
    CAN,
    CRC_REQUEST,
    EOT,
    MAX_RETRIES,
    NAK,
    SENDER_START_RETRIES,
    SENDER_TIMEOUT,
    Event,
    FileSent,
    FileStarted,
    Mode,
    Progress,
    TransferredFile,
    YmodemFile,
    check_mode,
    encode_block,
    header_payload,
)
from serial_mcp.errors import InvalidArgument

__all__ = ["XmodemSender", "YmodemSender"]

_S_START, _S_WAIT_ACK, _S_WAIT_C = range(3)
_K_BLOCK, _K_EOT, _K_HEADER, _K_END = range(4)


class _Sender(TransferMachine):
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
            payload = header_payload(file)
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
        check_mode(mode)
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
            if len(header_payload(file)) > 1024:
                raise InvalidArgument(messages.XMODEM_NAME_TOO_LONG.format(name=file.name), name=file.name)
        super().__init__(list(files), block_size, True, max_retries, start_retries)
