"""PtyBridge: a port handle served on a pseudo-terminal, so any program can open it as a serial port.

``serial-mcp replay --pty`` and the pytest fixtures (``serial_replay``, ``serial_sim``) put a
replayed capture or a simulated device behind a PTY: the software under test opens ``path`` with
pyserial, picocom or its own code; what the device sends arrives there, and what the program writes
goes to the device (a ``respond`` replay answers it, ``sim://modem`` interprets AT commands).

Nothing is played until a program holds the PTY open, so no byte is lost into the void or flushed
by the program's own open. Two threads per bridge, both ended by ``close``: one waits for the host
and copies device → host, the other copies host → device; a wake pipe ends their ``select`` at once.
When the host closes the PTY and opens it again, the bridge carries on with the new open.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Final, Self

from serial_mcp.serial.handle import PortEOF, PortHandle
from serial_mcp.serial.raw_pty import open_raw_pty, wait_readable
from serial_mcp.serial.replay import ReplayPortHandle

HOST_SETTLE_S: Final = 0.2  # after the host's open: let it finish configuring (and flushing) the port
HUP_SAMPLE_S: Final = 0.05  # how often "has a host opened the PTY yet?" is sampled (no event exists)
JOIN_S: Final = 5.0
_CHUNK: Final = 65536


class PtyBridge:
    """``handle`` served on a new PTY at ``path``; ``start`` it, ``close`` it (also closes ``handle``).
    ``on_finished(path)`` is called once (on the bridge's thread) when a non-looping replay has played
    through."""

    def __init__(self, handle: PortHandle, on_finished: Callable[[str], None] | None = None) -> None:
        self.handle = handle
        self._on_finished = on_finished
        self._master, slave, self.path = open_raw_pty()
        os.close(slave)  # only the host holds the slave: its open is what starts the bridge
        self._wake_r, self._wake_w = os.pipe()
        self._stop = threading.Event()
        self._closed = False
        self.host_opened = threading.Event()  # a program has opened ``path`` (at least once)
        self.finished = threading.Event()  # a replay (not looping) has delivered its whole recording
        self.error: BaseException | None = None  # why the device side ended, if it failed
        self._threads: list[threading.Thread] = []

    @property
    def mismatch_count(self) -> int:
        """Host writes that differed from the recording (``respond`` replays; 0 otherwise)."""
        return self.handle.mismatch_count if isinstance(self.handle, ReplayPortHandle) else 0

    def start(self) -> Self:
        self._spawn(self._to_host, "to-host")
        return self

    def _spawn(self, target: object, role: str) -> None:
        thread = threading.Thread(target=target, name=f"pty-bridge {role} {self.path}", daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    # --- the two directions ---------------------------------------------------------------------------

    def _to_host(self) -> None:
        if not self._wait_for_host():
            return
        self._spawn(self._from_host, "from-host")
        while not self._stop.is_set():
            try:
                data = self.handle.read_chunk()  # b"" after interrupt (stop)
            except (OSError, PortEOF) as exc:
                self.error = exc
                return
            if data:
                self._write_all(data)
            if not self.finished.is_set() and self._played_through():
                self.finished.set()
                if self._on_finished is not None:
                    self._on_finished(self.path)

    def _from_host(self) -> None:
        while not self._stop.is_set():
            if not wait_readable(self._master, self._wake_r):
                return
            try:
                data = os.read(self._master, _CHUNK)
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno != errno.EIO or not self._wait_for_host():  # EIO: the host closed the PTY
                    return
                continue
            if data:
                try:
                    self.handle.write(data)
                except OSError as exc:
                    self.error = exc
                    return

    def _played_through(self) -> bool:
        h = self.handle
        return (
            isinstance(h, ReplayPortHandle) and not h.spec.loop and h.finished.is_set() and not h.due_bytes()
        )

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._stop.is_set():
            try:
                n = os.write(self._master, view)
            except BlockingIOError:  # the host is not reading: wait until it does (or we stop)
                with contextlib.suppress(OSError, ValueError):
                    select.select([self._wake_r], [self._master], [])
                continue
            except OSError:  # the host went away: its bytes are gone with it
                return
            view = view[n:]

    def _wait_for_host(self) -> bool:
        """Until a program opens the PTY. The master reports POLLHUP while nobody holds the slave;
        the kernel offers no event for the open itself, so the HUP state is sampled. False if stopped."""
        poller = select.poll()
        poller.register(self._master, select.POLLHUP)
        while not self._stop.is_set():
            events = poller.poll(HUP_SAMPLE_S * 1000)
            if not any(mask & select.POLLHUP for _, mask in events):
                self.host_opened.set()
                return not self._stop.wait(HOST_SETTLE_S)
            if self._stop.wait(HUP_SAMPLE_S):
                return False
        return False

    # --- lifetime -------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask both threads to end. Safe from a signal handler; ``close`` does the rest."""
        self._stop.set()
        self.handle.interrupt()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``stop`` (True) or ``timeout`` seconds (False)."""
        return self._stop.wait(timeout)

    def close(self) -> None:
        """Stop, join the threads, close the PTY and the handle. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.stop()
        deadline = time.monotonic() + JOIN_S
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for fd in (self._master, self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self.handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
