"""Time for simulated devices: play bytes (or run a step) some milliseconds from now, on one thread per open
port.

A device that answers after 20–150 ms, counts down once a second or drains a flow-control window needs a
clock. ``Timeline.after(ms, action)`` queues an action; a daemon thread waits on a condition variable for
the earliest one (no polling) and runs it. ``cancel()`` drops what is queued (a board that reboots),
``stop()`` ends the thread when the port closes.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar
from urllib.parse import parse_qs, urlsplit

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial.fake import FakeDevice, FakePortHandle

Action = Callable[[], None]


class Timeline:
    """Runs queued actions at their time, in order, on its own thread."""

    def __init__(self, name: str) -> None:
        self._cond = threading.Condition()
        self._queue: list[tuple[float, int, Action]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"sim-timeline {name}", daemon=True)
        self._thread.start()

    def after(self, ms: float, action: Action) -> None:
        """Run ``action`` ``ms`` milliseconds from now (after anything queued for the same moment)."""
        with self._cond:
            heapq.heappush(self._queue, (time.monotonic() + ms / 1000, next(self._seq), action))
            self._cond.notify_all()

    def cancel(self) -> None:
        """Forget every queued action."""
        with self._cond:
            self._queue.clear()
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    if not self._queue:
                        self._cond.wait()
                        continue
                    delay = self._queue[0][0] - time.monotonic()
                    if delay <= 0:
                        break
                    self._cond.wait(delay)
                if self._stopped:
                    return
                _, _, action = heapq.heappop(self._queue)
            action()


class TimedPortHandle(FakePortHandle):
    """A simulated port whose device keeps a timeline: closing the port stops it."""

    def __init__(self, device: FakeDevice, settings: SerialSettings, timeline: Timeline) -> None:
        super().__init__(device, settings)
        self.timeline = timeline

    def close(self) -> None:
        self.timeline.stop()
        super().close()


def sim_option(port: str, option: str, default: str, allowed: str, ok: Callable[[str], bool]) -> str:
    """``option`` of a ``sim://`` port's query (``default`` where not given); a value ``ok`` refuses
    is ``invalid_argument`` naming what is ``allowed``. Read before the timeline's thread starts, so
    a refused open leaves none."""
    value = parse_qs(urlsplit(port).query).get(option, [default])[-1]
    if not ok(value):
        raise InvalidArgument(
            messages.SIM_BAD_OPTION.format(port=port, option=option, allowed=allowed), port=port
        )
    return value


class Board(Protocol):
    """A simulated board: it answers what the host writes and starts when powered on."""

    def __call__(self, data: bytes, /) -> bytes | None: ...

    def power_on(self) -> None: ...


BoardT = TypeVar("BoardT", bound=Board)


def start_board(port: str, make: Callable[[FakeDevice, Timeline], BoardT]) -> BoardT:
    """A board made on a new device and timeline, answering the device's writes, powered on."""
    device = FakeDevice(port)
    board = make(device, Timeline(port))
    device.responder = board
    board.power_on()
    return board
