"""RxPump: the one thread per connection that moves bytes from the port into the ring.

It blocks in ``PortHandle.read_chunk`` (no polling), hands each chunk with its arrival time to
``on_data``, and reports how it ended through ``on_stop`` exactly once: ``None`` for a requested
stop, the exception for a read error or EOF. A pump never dies silently.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from serial_mcp.serial.handle import PortHandle

log = logging.getLogger(__name__)


class RxPump:
    """Owns the reading side of one port handle."""

    def __init__(
        self,
        handle: PortHandle,
        on_data: Callable[[bytes, float], None],
        on_stop: Callable[[BaseException | None], None],
        name: str = "rx-pump",
    ) -> None:
        self._handle = handle
        self._on_data = on_data
        self._on_stop = on_stop
        self._stopping = threading.Event()
        self._running = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._running = True
        self._thread.start()

    def stop(self, join_timeout: float = 5.0) -> None:
        """Ask the pump to end and wait for it (call from a worker thread, not the event loop)."""
        self._stopping.set()
        self._handle.cancel_read()
        if threading.current_thread() is not self._thread:
            self._thread.join(join_timeout)

    @property
    def alive(self) -> bool:
        """False once the read loop has ended (set before ``on_stop`` runs, so it is never stale)."""
        return self._running

    def _run(self) -> None:
        read = self._handle.read_chunk
        on_data = self._on_data
        now = time.time
        error: BaseException | None = None
        try:
            while not self._stopping.is_set():
                data = read()
                if data:
                    on_data(data, now())
        except BaseException as exc:
            if not self._stopping.is_set():
                error = exc
                log.info("rx pump for %s stopped: %s", self._handle.name, exc)
        finally:
            self._running = False
            self._on_stop(error)
