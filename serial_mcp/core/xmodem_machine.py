"""What every XMODEM/YMODEM machine shares: the output buffer, the counters, detecting the peer's
CAN CAN, retry accounting, and the ways a transfer ends (done, failed, cancelled, peer gone)."""

from __future__ import annotations

from enum import Enum
from typing import Literal, TypeVar

from serial_mcp import messages
from serial_mcp.core.xmodem_table import Entry, Ignore, Refuse
from serial_mcp.core.xmodem_wire import (
    ABORT_SEQUENCE,
    BLOCK_TIMEOUT,
    CAN,
    Done,
    Event,
    Retry,
    TransferredFile,
    TransferResult,
    check_retries,
)

M = TypeVar("M", bound="TransferMachine")
S = TypeVar("S", bound=Enum)


class TransferMachine:
    """Output buffer, counters, CAN detection and the end of a transfer."""

    def __init__(self, max_retries: int, start_retries: int) -> None:
        check_retries("max_retries", max_retries)
        check_retries("start_retries", start_retries)
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

    def on_timeout(self) -> list[Event]:
        """Nothing arrived within ``timeout`` seconds: ask or send again, or give up after the retry
        limit."""
        events: list[Event] = []
        if self._result is None:
            self._can = False
            self._timed_out(events)
        return events

    def _timed_out(self, events: list[Event]) -> None:
        raise NotImplementedError

    def cancel(self) -> list[Event]:
        """Abort from this side: queue CAN x5 + BS x5 and end the transfer as cancelled."""
        if self._result is not None:
            return []
        self._out[:] = ABORT_SEQUENCE  # anything not yet written is not sent
        return [self._finish(False, messages.XMODEM_CANCELLED_LOCAL, cancelled_by="local")]

    def peer_gone(self) -> list[Event]:
        """The port went away under the transfer (unplugged, the other end closed): end it as
        failed, not cancelled, and send nothing - no one is left to receive an abort."""
        if self._result is not None:
            return []
        self._out.clear()
        return [self._finish(False, messages.XMODEM_PEER_GONE.format(blocks=self._blocks))]

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

    def _apply(self: M, entry: Entry[M, S], state: S, received: Enum, done: S, events: list[Event]) -> S:
        """Carry out one table entry for ``received`` in ``state``; returns the next state."""
        if isinstance(entry, Ignore):
            return state
        if isinstance(entry, Refuse):
            text = messages.XMODEM_PROTOCOL_ERROR.format(
                event=received.value, state=state.value, why=entry.why
            )
            events.append(self._fail(text))
            return done
        after = entry.action(self, events)
        if after not in entry.then:  # a bug in the machine, not the peer's doing
            raise AssertionError(f"{state} --{received}--> {after}, table allows {set(entry.then)}")
        if (after is done) != (self._result is not None):
            raise AssertionError(f"{state} --{received}--> {after} with result {self._result}")
        return after
