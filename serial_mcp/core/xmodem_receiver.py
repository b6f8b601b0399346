"""The XMODEM and YMODEM receivers: request blocks (C or NAK), check and acknowledge them, purge
after errors, and collect the files (sans-IO; see ``core.xmodem``)."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from serial_mcp import messages
from serial_mcp.core.xmodem_machine import TransferMachine
from serial_mcp.core.xmodem_table import Ignore, Refuse, Rule, Table, check_table
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


class ReceiverState(Enum):
    """Where a receiver is; the values are how an error message names the state."""

    START = "asking the sender to start"
    WAIT = "waiting for the next block"
    IN_BLOCK = "receiving a block"
    PURGE = "waiting for the line to clear after noise"
    DONE = "finished"


class ReceiverInput(Enum):
    """What a receiver can be told. Outside a block: a byte that starts a block, EOT, a lone CAN
    (two in a row abort in every state before the table is consulted), other bytes, or a timeout.
    A block's bytes go to its private buffer; once complete, the block is one input saying what
    it is (bad, the expected one, a repeat, a header, out of sequence)."""

    BLOCK_START = "the start of a block (SOH or STX)"
    EOT = "an end of file (EOT)"
    EOT_COPY = "an EOT read together with a packet not yet answered on the wire"
    CAN = "a lone CAN"
    NOISE = "a byte that is neither a block nor EOT"
    TIMEOUT = "a timeout"
    BAD_NUMBER = "a block whose number and complement disagree"
    BAD_CHECK = "a block whose checksum/CRC does not match"
    HEADER = "a YMODEM header (block 0)"
    NEXT = "the expected block"
    REPEAT = "a repeat of the last block"
    EARLY_REPEAT = "a repeat of the last block that came before our answer to it went out"
    OUT_OF_SYNC = "a block out of sequence"


_BYTES = {
    SOH: ReceiverInput.BLOCK_START,
    STX: ReceiverInput.BLOCK_START,
    EOT: ReceiverInput.EOT,
    CAN: ReceiverInput.CAN,
}


class _Receiver(TransferMachine):
    """Requests, checks and acknowledges blocks (XMODEM alone, or YMODEM batch).

    What it does with each input is in ``RECEIVER_TABLE`` below; the methods are its actions.
    Where XMODEM and YMODEM differ (block 0, the first EOT) the action asks ``_batch``.
    """

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
        self._state = ReceiverState.START
        self._buf = bytearray()
        self._need = 0
        self._byte = 0  # the byte being handled outside a block
        self._expect_header = batch
        self._expected = 0 if batch else 1
        self._last: int | None = None
        self._data = bytearray()
        self._header: TransferredFile | None = None
        self._file_blocks = 0
        self._eot_nakked = False
        self._request()

    @property
    def state(self) -> ReceiverState:
        """The state of the transition table the machine is in."""
        return ReceiverState.DONE if self._result is not None else self._state

    # output helpers
    def _request(self) -> None:
        """The start request: C for CRC-16, NAK for the checksum."""
        self._out.append(CRC_REQUEST if self._crc else NAK)
        self.timeout = CRC_REQUEST_TIMEOUT if self._crc else BLOCK_TIMEOUT

    def _wait(self) -> ReceiverState:
        self.timeout = BLOCK_TIMEOUT
        return ReceiverState.WAIT

    def _nak(self) -> ReceiverState:
        self._out.append(CRC_REQUEST if self._expect_header else NAK)
        return self._wait()

    # input
    def receive_bytes(self, data: bytes) -> list[Event]:
        """Handle the sender's bytes; returns the events they caused."""
        events: list[Event] = []
        i = 0
        n = len(data)
        while i < n and self._result is None:
            if self._state is ReceiverState.IN_BLOCK:
                take = min(self._need - len(self._buf), n - i)
                self._buf += data[i : i + take]
                i += take
                if len(self._buf) == self._need and self._handle(self._classify_block(), events):
                    break  # the block was rejected: the rest of this chunk is stale
                continue
            byte = data[i]
            i += 1
            if self._saw_cancel(byte):
                events.append(self._peer_cancelled())
                break
            self._byte = byte
            received = _BYTES.get(byte, ReceiverInput.NOISE)
            if received is ReceiverInput.EOT and self._out and self._state is ReceiverState.WAIT:
                received = ReceiverInput.EOT_COPY  # see _drop_early_repeat
            self._handle(received, events)
        return events

    def _timed_out(self, events: list[Event]) -> None:
        self._handle(ReceiverInput.TIMEOUT, events)

    def _handle(self, received: ReceiverInput, events: list[Event]) -> bool:
        """Apply the table's entry; True when the rest of the chunk is to be dropped."""
        entry = RECEIVER_TABLE[(self._state, received)]
        self._state = self._apply(entry, self._state, received, ReceiverState.DONE, events)
        return isinstance(entry, Rule) and entry.purge

    def _classify_block(self) -> ReceiverInput:
        """What the complete block in the buffer is."""
        block = self._buf
        number, complement = block[1], block[2]
        payload = block[3 : 3 + (128 if block[0] == SOH else 1024)]
        if number ^ complement != 0xFF:
            return ReceiverInput.BAD_NUMBER
        if block[3 + len(payload) :] != block_check(bytes(payload), self._crc):
            return ReceiverInput.BAD_CHECK
        if self._expect_header:
            return ReceiverInput.HEADER if number == 0 else ReceiverInput.OUT_OF_SYNC
        if number == self._expected:
            return ReceiverInput.NEXT
        if number != self._last:
            return ReceiverInput.OUT_OF_SYNC
        # Before our answer to the original is written, the sender cannot have missed it: this copy
        # is the line's or a timer's, and answering it too would leave a stale ACK that the sender
        # could read as the answer to its next packet.
        return ReceiverInput.EARLY_REPEAT if self._out else ReceiverInput.REPEAT

    def _block(self) -> tuple[int, bytes]:
        """The number and payload of the (checked) block in the buffer."""
        block = bytes(self._buf)
        return block[1], block[3 : 3 + (128 if block[0] == SOH else 1024)]

    # actions: bytes between blocks
    def _begin_block(self, events: list[Event]) -> ReceiverState:
        self._buf = bytearray([self._byte])
        self._need = (128 if self._byte == SOH else 1024) + (5 if self._crc else 4)
        self.timeout = CHARACTER_TIMEOUT
        return ReceiverState.IN_BLOCK

    def _purge(self, events: list[Event]) -> ReceiverState:
        self.timeout = CHARACTER_TIMEOUT
        return ReceiverState.PURGE

    def _on_eot(self, events: list[Event]) -> ReceiverState:
        if self._batch:
            if self._expect_header:  # our ACK of the last EOT was lost
                self._out += bytes([ACK, CRC_REQUEST])
                return self._wait()
            if not self._eot_nakked:
                self._eot_nakked = True
                self._out.append(NAK)
                return self._wait()
        self._out.append(ACK)
        self._complete_file(events)
        if self._batch:
            self._expect_header = True
            self._expected = 0
            self._eot_nakked = False
            self._out.append(CRC_REQUEST)
            return self._wait()
        events.append(self._finish(True))
        return ReceiverState.DONE

    # actions: timeouts
    def _start_timeout(self, events: list[Event]) -> ReceiverState:
        self._starts += 1
        if self._starts > self._start_retries:
            events.append(self._fail(messages.XMODEM_NO_SENDER.format(tries=self._start_retries)))
            return ReceiverState.DONE
        if self._crc and not self._batch and self._starts > CRC_ATTEMPTS:
            self._crc = False  # Byrns: the sender may not know CRC; fall back to the checksum
        self._request()
        return ReceiverState.START

    def _ask_again(self, reason: str, events: list[Event]) -> ReceiverState:
        """NAK (or C, for a header) after an error, or give up; the stale buffer goes."""
        self._buf.clear()
        if self._error(self._expected, reason, events):
            return self._nak()
        return ReceiverState.DONE

    # actions: complete blocks
    def _out_of_sync(self, events: list[Event]) -> ReceiverState:
        number, _ = self._block()
        events.append(self._fail(messages.XMODEM_OUT_OF_SYNC.format(got=number, expected=self._expected)))
        return ReceiverState.DONE

    def _on_header(self, events: list[Event]) -> ReceiverState:
        self._eot_nakked = False
        header = parse_header(self._block()[1])
        self._out.append(ACK)
        self._errors = 0
        if header is None:  # the empty block 0 ends the batch
            events.append(self._finish(True))
            return ReceiverState.DONE
        self._header = header
        self._expect_header = False
        self._last = 0
        self._expected = 1
        self._file_blocks = 0
        self._data.clear()
        assert header.name is not None
        events.append(FileStarted(header.name, header.declared_size, header.mtime, header.mode))
        self._out.append(CRC_REQUEST)
        return self._wait()

    def _on_repeat(self, events: list[Event]) -> ReceiverState:
        """Our ACK was lost and the sender repeated the block: ACK it again, keep nothing."""
        self._eot_nakked = False
        number, _ = self._block()
        self._retries += 1
        events.append(Retry(number, messages.XMODEM_REASON_DUPLICATE, 1))
        self._out.append(ACK)
        if self._batch and number == 0 and self._file_blocks == 0:
            self._out.append(CRC_REQUEST)  # a repeated header: ask for the data again
        return self._wait()

    def _drop_early_repeat(self, events: list[Event]) -> ReceiverState:
        """A copy of the block just answered, in the same read: count it, answer once."""
        number, _ = self._block()
        self._retries += 1
        events.append(Retry(number, messages.XMODEM_REASON_DUPLICATE, 1))
        return self._wait()

    def _drop_eot_copy(self, events: list[Event]) -> ReceiverState:
        """An EOT in the same read as a packet just answered: the sender cannot have seen the
        answer yet, so this is a copy; answering it too would leave a stale reply."""
        self._retries += 1
        events.append(Retry(-1, messages.XMODEM_REASON_DUPLICATE, 1))
        return ReceiverState.WAIT

    def _accept(self, events: list[Event]) -> ReceiverState:
        self._eot_nakked = False
        number, payload = self._block()
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
            return ReceiverState.DONE
        return self._wait()

    # files
    def _file_name(self) -> str | None:
        return self._header.name if self._header else None

    def _total(self) -> int | None:
        return self._header.declared_size if self._header else self._size

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


# --- the transition table --------------------------------------------------------------------------

_S, _I = ReceiverState, ReceiverInput
_BETWEEN_BLOCKS = (_I.BLOCK_START, _I.EOT, _I.EOT_COPY, _I.CAN, _I.NOISE)
_BLOCKS = (_I.BAD_NUMBER, _I.BAD_CHECK, _I.HEADER, _I.NEXT, _I.REPEAT, _I.EARLY_REPEAT, _I.OUT_OF_SYNC)
_Action = Callable[[_Receiver, list[Event]], ReceiverState]


def _retry_after(reason: str) -> _Action:
    """The action for an error that costs a retry: NAK (or C) after ``reason``, or give up."""
    return lambda machine, events: machine._ask_again(reason, events)


def _rule(action: _Action, *then: ReceiverState, purge: bool = False) -> Rule[_Receiver, ReceiverState]:
    return Rule(action, frozenset(then), purge)


_ASKED = (_S.WAIT, _S.DONE)  # after a NAK (or C), or giving up
_NOT_A_BLOCK = Refuse("only a block being received can be complete")

RECEIVER_TABLE: Table[_Receiver, ReceiverState] = {
    (_S.START, _I.BLOCK_START): _rule(_Receiver._begin_block, _S.IN_BLOCK),
    (_S.START, _I.EOT): _rule(_Receiver._on_eot, *_ASKED),  # an empty XMODEM transfer
    (_S.START, _I.EOT_COPY): Refuse("before the first block nothing has been answered"),
    (_S.START, _I.CAN): Ignore("a lone CAN is line noise"),
    (_S.START, _I.NOISE): Ignore("a banner or the echoed command before the first block"),
    (_S.START, _I.TIMEOUT): _rule(_Receiver._start_timeout, _S.START, _S.DONE),
    (_S.WAIT, _I.BLOCK_START): _rule(_Receiver._begin_block, _S.IN_BLOCK),
    (_S.WAIT, _I.EOT): _rule(_Receiver._on_eot, *_ASKED),
    (_S.WAIT, _I.EOT_COPY): _rule(_Receiver._drop_eot_copy, _S.WAIT),
    (_S.WAIT, _I.CAN): Ignore("a lone CAN is line noise"),
    (_S.WAIT, _I.NOISE): _rule(_Receiver._purge, _S.PURGE),
    (_S.WAIT, _I.TIMEOUT): _rule(_retry_after(messages.XMODEM_REASON_TIMEOUT), *_ASKED),
    **{(_S.PURGE, i): Ignore("stale bytes: wait for the line to clear") for i in _BETWEEN_BLOCKS},
    (_S.PURGE, _I.TIMEOUT): _rule(_retry_after(messages.XMODEM_REASON_NOISE), *_ASKED),
    **{(_S.IN_BLOCK, i): Refuse("inside a block every byte is data") for i in _BETWEEN_BLOCKS},
    (_S.IN_BLOCK, _I.TIMEOUT): _rule(_retry_after(messages.XMODEM_REASON_SHORT), *_ASKED),
    (_S.IN_BLOCK, _I.BAD_NUMBER): _rule(_retry_after(messages.XMODEM_REASON_BAD_NUMBER), *_ASKED, purge=True),
    (_S.IN_BLOCK, _I.BAD_CHECK): _rule(_retry_after(messages.XMODEM_REASON_BAD_CHECK), *_ASKED, purge=True),
    (_S.IN_BLOCK, _I.HEADER): _rule(_Receiver._on_header, *_ASKED),
    (_S.IN_BLOCK, _I.NEXT): _rule(_Receiver._accept, *_ASKED),
    (_S.IN_BLOCK, _I.REPEAT): _rule(_Receiver._on_repeat, _S.WAIT),
    (_S.IN_BLOCK, _I.EARLY_REPEAT): _rule(_Receiver._drop_early_repeat, _S.WAIT),
    (_S.IN_BLOCK, _I.OUT_OF_SYNC): _rule(_Receiver._out_of_sync, _S.DONE),
    **{(s, i): _NOT_A_BLOCK for s in (_S.START, _S.WAIT, _S.PURGE) for i in _BLOCKS},
    **{(_S.DONE, i): Ignore("the transfer is over") for i in _I},
}

check_table(RECEIVER_TABLE, _S, _I)


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
