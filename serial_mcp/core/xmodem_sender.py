"""The XMODEM and YMODEM senders: cut files into blocks, follow the receiver's handshake for the
check, resend on NAK or timeout, and end the YMODEM batch (sans-IO; see ``core.xmodem``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Literal

from serial_mcp import messages
from serial_mcp.core.xmodem_machine import TransferMachine
from serial_mcp.core.xmodem_table import Entry, Ignore, Refuse, Rule, Table, check_table
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


class SenderState(Enum):
    """Where a sender is; the values are how an error message names the state."""

    START = "waiting for the receiver's first request"
    WAIT_BLOCK_ACK = "waiting for the answer to a data block"
    WAIT_EOT_ACK = "waiting for the answer to the end of file (EOT)"
    WAIT_HEADER_ACK = "waiting for the answer to a YMODEM header (block 0)"
    WAIT_END_ACK = "waiting for the answer to the empty block 0 that ends the batch"
    WAIT_DATA_REQUEST = "waiting for the receiver to ask for the file's data"
    WAIT_HEADER_REQUEST = "waiting for the receiver to ask for the next file"
    DONE = "finished"


class SenderInput(Enum):
    """What a sender can be told: a reply byte from the receiver, or that its time ran out.
    Two consecutive CAN abort in every state before the table is consulted; a lone CAN is noise."""

    ACK = "an ACK"
    NAK = "a NAK"
    C = "a C (CRC request)"
    NOISE = "a byte that is not a reply"
    TIMEOUT = "a timeout"


_REPLIES = {ACK: SenderInput.ACK, NAK: SenderInput.NAK, CRC_REQUEST: SenderInput.C}
_WAITING_FOR_ACK = (
    SenderState.WAIT_BLOCK_ACK,
    SenderState.WAIT_EOT_ACK,
    SenderState.WAIT_HEADER_ACK,
    SenderState.WAIT_END_ACK,
)


class _Sender(TransferMachine):
    """Sends files block by block, resending on NAK or timeout (XMODEM alone, or YMODEM batch).

    What it does with each input is in its transition table (``XMODEM_SENDER_TABLE`` or
    ``YMODEM_SENDER_TABLE`` below); the methods here are the table's actions.
    """

    def __init__(
        self,
        files: Sequence[YmodemFile | bytes],
        block_size: int,
        batch: bool,
        max_retries: int,
        start_retries: int,
        table: Table[_Sender, SenderState],
    ) -> None:
        super().__init__(max_retries, start_retries)
        self._table = table
        self._batch = batch
        self._queue = list(files)
        self._block_size = block_size
        self._crc = True
        self._acked_any = False
        self._answered = False  # Byrns: a C switches to CRC only before the first NAK or ACK
        self._state = SenderState.START
        self._packet = b""
        self._file_index = 0
        self._plan: list[tuple[int, int]] = []  # (offset, size) of each block of the current file
        self._step = 0  # index into _plan of the block awaiting its ACK
        self._eot_naks = 0

    @property
    def state(self) -> SenderState:
        """The state of the transition table the machine is in."""
        return SenderState.DONE if self._result is not None else self._state

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
    def _send(self, state: SenderState, packet: bytes) -> SenderState:
        self._packet = packet
        self._errors = 0
        self._eot_naks = 0
        self._out += packet
        self.timeout = SENDER_TIMEOUT
        return state

    def _send_block(self) -> SenderState:
        offset, size = self._plan[self._step]
        payload = self._data()[offset : offset + size]
        block = encode_block(self._step + 1, payload, crc=self._crc, size=size)
        return self._send(SenderState.WAIT_BLOCK_ACK, block)

    def _send_data_or_eot(self, events: list[Event] | None = None) -> SenderState:
        self._step = 0
        self._make_plan()
        if self._plan:
            return self._send_block()
        return self._send(SenderState.WAIT_EOT_ACK, bytes([EOT]))

    def _send_header_or_end(self, events: list[Event] | None = None) -> SenderState:
        if self._file_index < len(self._queue):
            file = self._current()
            assert isinstance(file, YmodemFile)
            payload = header_payload(file)
            size = 128 if len(payload) <= 128 else 1024
            return self._send(
                SenderState.WAIT_HEADER_ACK, encode_block(0, payload, crc=True, size=size, pad=0)
            )
        return self._send(SenderState.WAIT_END_ACK, encode_block(0, b"", crc=True, size=128, pad=0))

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
            self._handle(_REPLIES.get(byte, SenderInput.NOISE), events)
            if len(self._out) > queued:
                # New output answers this byte; what else arrived with it is stale (purge),
                # except an abort, which must not be missed.
                if self._result is None and bytes([CAN, CAN]) in data[i + 1 :]:
                    events.append(self._peer_cancelled())
                break
        return events

    def _timed_out(self, events: list[Event]) -> None:
        self._handle(SenderInput.TIMEOUT, events)

    def _handle(self, received: SenderInput, events: list[Event]) -> None:
        entry = self._table[(self._state, received)]
        self._state = self._apply(entry, self._state, received, SenderState.DONE, events)

    # actions: the handshake
    def _start(self, crc: bool) -> SenderState:
        self._crc = crc
        return self._send_header_or_end() if self._batch else self._send_data_or_eot()

    def _start_crc(self, events: list[Event]) -> SenderState:
        return self._start(True)

    def _start_checksum(self, events: list[Event]) -> SenderState:
        return self._start(False)

    def _start_timeout(self, events: list[Event]) -> SenderState:
        self._errors += 1
        if self._errors >= self._start_retries:
            events.append(self._fail(messages.XMODEM_NO_START.format(tries=self._errors)))
            return SenderState.DONE
        return SenderState.START

    # actions: answers to what was sent
    def _resend(self, reason: str, events: list[Event]) -> SenderState:
        """Send the packet again, counting an error; DONE when the retries are used up."""
        if self._error(self._block_label(), reason, events):
            self._out += self._packet
            return self._state
        return SenderState.DONE

    def _nak(self, events: list[Event]) -> SenderState:
        self._answered = True
        if self._state is SenderState.WAIT_EOT_ACK and self._eot_naks == 0:
            self._eot_naks = 1  # YMODEM receivers NAK the first EOT on purpose: free
            self._out += self._packet
            return self._state
        return self._resend(messages.XMODEM_REASON_NAK, events)

    def _c_as_nak(self, events: list[Event]) -> SenderState:
        """A C repeats the receiver's request (it never saw this packet): as a NAK, but a C does
        not count as the receiver's first answer."""
        answered = self._answered
        state = self._nak(events)
        self._answered = answered
        return state

    def _xmodem_c(self, events: list[Event]) -> SenderState:
        """XMODEM: a C before the first ACK repeats the start request (Byrns), after it is noise;
        a late C before any NAK or ACK switches a checksum start to CRC (Byrns 7.2.3)."""
        if self._acked_any:
            return self._state
        if not self._answered and not self._crc:
            self._crc = True
            return self._send_data_or_eot()
        return self._c_as_nak(events)

    def _resend_on_timeout(self, events: list[Event]) -> SenderState:
        return self._resend(messages.XMODEM_REASON_TIMEOUT, events)

    def _end_on_timeout(self, events: list[Event]) -> SenderState:
        """The empty block 0 went unanswered: every file got through and some receivers just stop."""
        state = self._resend(messages.XMODEM_REASON_TIMEOUT, events)
        return self._end_batch_anyway(events) if state is SenderState.DONE else state

    def _no_request(self, events: list[Event]) -> SenderState:
        """No C asking for what comes next: count it; after the last file, the batch is over anyway."""
        if self._error(self._block_label(), messages.XMODEM_REASON_NO_REQUEST, events):
            return self._state
        if self._state is SenderState.WAIT_HEADER_REQUEST and self._file_index == len(self._queue):
            return self._end_batch_anyway(events)
        return SenderState.DONE

    def _end_batch_anyway(self, events: list[Event]) -> SenderState:
        self._out.clear()
        events[-1] = self._finish(True)
        return SenderState.DONE

    def _give_up_message(self, block: int, reason: str) -> str:
        if self._state is SenderState.WAIT_EOT_ACK:
            return messages.XMODEM_EOT_UNANSWERED.format(tries=self.max_retries + 1)
        return super()._give_up_message(block, reason)

    def _block_label(self) -> int:
        if self._state is SenderState.WAIT_BLOCK_ACK:
            return self._step + 1
        eot = self._state in (SenderState.WAIT_EOT_ACK, SenderState.WAIT_HEADER_REQUEST)
        return -1 if eot else 0

    # actions: ACKs
    def _acked(self) -> None:
        self._answered = True
        self._acked_any = True
        self._errors = 0

    def _block_acked(self, events: list[Event]) -> SenderState:
        self._acked()
        offset, size = self._plan[self._step]
        data = self._data()
        sent = min(size, len(data) - offset)
        self._blocks += 1
        self._bytes += sent
        self._step += 1
        events.append(Progress(self._name(), self._step, len(self._plan), offset + sent, len(data)))
        if self._step < len(self._plan):
            return self._send_block()
        return self._send(SenderState.WAIT_EOT_ACK, bytes([EOT]))

    def _file_sent(self, events: list[Event]) -> None:
        self._acked()
        name, size = self._name(), len(self._data())
        self._files.append(TransferredFile(name, size))
        events.append(FileSent(name, size))
        self._file_index += 1

    def _eot_acked_done(self, events: list[Event]) -> SenderState:
        self._file_sent(events)
        events.append(self._finish(True))
        return SenderState.DONE

    def _eot_acked_next(self, events: list[Event]) -> SenderState:
        self._file_sent(events)
        return SenderState.WAIT_HEADER_REQUEST

    def _header_acked(self, events: list[Event]) -> SenderState:
        self._acked()
        file = self._current()
        assert isinstance(file, YmodemFile)
        events.append(FileStarted(file.name, len(file.data), file.mtime, file.mode))
        return SenderState.WAIT_DATA_REQUEST

    def _end_acked(self, events: list[Event]) -> SenderState:
        self._acked()
        events.append(self._finish(True))
        return SenderState.DONE


# --- the transition tables -------------------------------------------------------------------------

_S, _I = SenderState, SenderInput
_DATA = frozenset({_S.WAIT_BLOCK_ACK, _S.WAIT_EOT_ACK})
_HEADER = frozenset({_S.WAIT_HEADER_ACK, _S.WAIT_END_ACK})


def _rule(
    action: Callable[[_Sender, list[Event]], SenderState], *then: SenderState
) -> Rule[_Sender, SenderState]:
    return Rule(action, frozenset(then))


def _retry_rules(state: SenderState, on_c: Entry[_Sender, SenderState]) -> Table[_Sender, SenderState]:
    """Waiting for an ACK: NAK (or, where it means one, C) and a timeout resend; noise is ignored."""
    on_timeout = _rule(_Sender._end_on_timeout, state, _S.DONE) if state is _S.WAIT_END_ACK else None
    return {
        (state, _I.NAK): _rule(_Sender._nak, state, _S.DONE),
        (state, _I.C): on_c,
        (state, _I.NOISE): Ignore("line noise: the answer may still come"),
        (state, _I.TIMEOUT): on_timeout or _rule(_Sender._resend_on_timeout, state, _S.DONE),
    }


_START_TIMEOUT = _rule(_Sender._start_timeout, _S.START, _S.DONE)
_STALE_ACK = Ignore("an ACK before anything was sent is stale")
_OVER: Table[_Sender, SenderState] = {(_S.DONE, i): Ignore("the transfer is over") for i in _I}
_NO_BATCH = Refuse("XMODEM sends one file and has no YMODEM header or batch end")
_C_REPEATS = _rule(_Sender._c_as_nak, *_WAITING_FOR_ACK, _S.DONE)

XMODEM_SENDER_TABLE: Table[_Sender, SenderState] = {
    (_S.START, _I.C): _rule(_Sender._start_crc, *_DATA),
    (_S.START, _I.NAK): _rule(_Sender._start_checksum, *_DATA),
    (_S.START, _I.ACK): _STALE_ACK,
    (_S.START, _I.NOISE): Ignore("a banner or echo before the receiver starts"),
    (_S.START, _I.TIMEOUT): _START_TIMEOUT,
    (_S.WAIT_BLOCK_ACK, _I.ACK): _rule(_Sender._block_acked, *_DATA),
    **_retry_rules(_S.WAIT_BLOCK_ACK, _rule(_Sender._xmodem_c, *_DATA, _S.DONE)),
    (_S.WAIT_EOT_ACK, _I.ACK): _rule(_Sender._eot_acked_done, _S.DONE),
    **_retry_rules(_S.WAIT_EOT_ACK, _rule(_Sender._xmodem_c, *_DATA, _S.DONE)),
    **{
        (s, i): _NO_BATCH
        for s in (_S.WAIT_HEADER_ACK, _S.WAIT_END_ACK, _S.WAIT_DATA_REQUEST, _S.WAIT_HEADER_REQUEST)
        for i in _I
    },
    **_OVER,
}

YMODEM_SENDER_TABLE: Table[_Sender, SenderState] = {
    (_S.START, _I.C): _rule(_Sender._start_crc, *_HEADER),
    (_S.START, _I.NAK): Ignore("YMODEM starts with C; a NAK asks for a checksum XMODEM transfer"),
    (_S.START, _I.ACK): _STALE_ACK,
    (_S.START, _I.NOISE): Ignore("a banner or echo before the receiver starts"),
    (_S.START, _I.TIMEOUT): _START_TIMEOUT,
    (_S.WAIT_HEADER_ACK, _I.ACK): _rule(_Sender._header_acked, _S.WAIT_DATA_REQUEST),
    **_retry_rules(_S.WAIT_HEADER_ACK, _C_REPEATS),
    (_S.WAIT_DATA_REQUEST, _I.C): _rule(_Sender._send_data_or_eot, *_DATA),
    # A NAK here: the receiver's C after its ACK was lost, and it wants block 1.
    (_S.WAIT_DATA_REQUEST, _I.NAK): _rule(_Sender._send_data_or_eot, *_DATA),
    (_S.WAIT_DATA_REQUEST, _I.ACK): Ignore("a repeated ACK of the header"),
    (_S.WAIT_DATA_REQUEST, _I.NOISE): Ignore("line noise: the request may still come"),
    (_S.WAIT_DATA_REQUEST, _I.TIMEOUT): _rule(_Sender._no_request, _S.WAIT_DATA_REQUEST, _S.DONE),
    (_S.WAIT_BLOCK_ACK, _I.ACK): _rule(_Sender._block_acked, *_DATA),
    **_retry_rules(_S.WAIT_BLOCK_ACK, Ignore("a C after the header was acknowledged asked for block 1")),
    (_S.WAIT_EOT_ACK, _I.ACK): _rule(_Sender._eot_acked_next, _S.WAIT_HEADER_REQUEST),
    **_retry_rules(_S.WAIT_EOT_ACK, _C_REPEATS),
    (_S.WAIT_HEADER_REQUEST, _I.C): _rule(_Sender._send_header_or_end, *_HEADER),
    (_S.WAIT_HEADER_REQUEST, _I.NAK): Ignore("the next file is asked for with C"),
    (_S.WAIT_HEADER_REQUEST, _I.ACK): Ignore("a repeated ACK of the EOT"),
    (_S.WAIT_HEADER_REQUEST, _I.NOISE): Ignore("line noise: the request may still come"),
    (_S.WAIT_HEADER_REQUEST, _I.TIMEOUT): _rule(_Sender._no_request, _S.WAIT_HEADER_REQUEST, _S.DONE),
    (_S.WAIT_END_ACK, _I.ACK): _rule(_Sender._end_acked, _S.DONE),
    **_retry_rules(_S.WAIT_END_ACK, _C_REPEATS),
    **_OVER,
}

check_table(XMODEM_SENDER_TABLE, _S, _I)
check_table(YMODEM_SENDER_TABLE, _S, _I)


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
        block_size = 1024 if mode == "1k" else 128
        super().__init__([bytes(data)], block_size, False, max_retries, start_retries, XMODEM_SENDER_TABLE)


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
        super().__init__(list(files), block_size, True, max_retries, start_retries, YMODEM_SENDER_TABLE)
