"""The XMODEM and YMODEM receivers: request blocks (C or NAK), check and acknowledge them, purge
after errors, and collect the files (sans-IO; see ``core.xmodem``)."""

from __future__ import annotations

from serial_mcp import messages
from serial_mcp.core.xmodem_machine import TransferMachine
from serial_mcp.core.xmodem_wire import (
    ACK,
    BLOCK_TIMEOUT,
    CAN,
    CHARACTER_TIMEOUT,
    CRC_ATTEMPTS,
    CRC_REQUEST,
    CRC_REQUEST_TIMEOUT,
    EOT,
    MAX_RETRIES,
    NAK,
    RECEIVER_START_RETRIES,
    SOH,
    STX,
    Event,
    FileReceived,
    FileStarted,
    Mode,
    Progress,
    Retry,
    TransferredFile,
    block_check,
    check_mode,
    parse_header,
)

__all__ = ["XmodemReceiver", "YmodemReceiver"]

_R_START, _R_WAIT, _R_BLOCK, _R_PURGE = range(4)


class _Receiver(TransferMachine):
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
        if block[3 + len(payload) :] != block_check(payload, self._crc):
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
        check_mode(mode)
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
