"""SystemPortHandle: a real port opened by pyserial (``serial/system_open.py`` opens it) — device paths,
loop://, socket://, rfc2217://.

Reads on file-descriptor ports (ttys, PTYs, ``socket://``) block in ``select`` on the port and a private
wake-up pipe, so an idle port costs no CPU and ``interrupt`` returns at once. ``rfc2217://`` has no
usable descriptor (pyserial's own telnet thread owns the socket): it is read with a short timeout.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import termios
import threading
import time
from collections.abc import Callable
from typing import Any

import serial

from serial_mcp import messages
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import DeviceError, ErrorCode
from serial_mcp.serial import holders
from serial_mcp.serial.handle import PortEOF
from serial_mcp.serial.judged import device_of
from serial_mcp.serial.readiness import wait_ready
from serial_mcp.serial.tx import BITS_PER_CHAR, WriteStopped

_READ_SIZE = 65536
# at most half the default ring a chunk: the event detector scans before a chunk could push out bytes it
# has not seen (serial/event_watch.room_for), which a chunk the size of the ring would do on arrival
_DRAIN_LIMIT = 128 * 1024
_DRAIN_FROM = 1024  # a first read shorter than this took all there was: no second read (EAGAIN)
_UART_BUFFER = 4096  # bytes a UART driver queues; a tty is writable again only once it nearly drained
_DIRECT_WRITE_MODULES = ("serial.serialposix", "serial.urlhandler.protocol_socket")
_CLOSE_WAIT = 5.0  # a woken writer returns at once; never close a descriptor a writer still uses
_GENERIC_TIMEOUT = (
    0.25  # ports without a file descriptor or cancel_read (rfc2217://): bounds interrupt latency
)
# pyserial's rfc2217 client waits for the server to confirm every SET_CONTROL (DTR, RTS, BREAK, flow
# control). ser2net never confirms DTR/RTS for a device without modem lines (a PTY, some adapters),
# so the open itself times out; ``?ign_set_control`` sends them without waiting. We say so instead of
# adding it silently: with it, line control is unconfirmed.
_CONTROL_TIMEOUT = "waiting for option 'control'"


def pyserial_kwargs(settings: SerialSettings) -> dict[str, Any]:
    """Map our settings onto pyserial attribute names."""
    return {
        **settings.pyserial(),
        "xonxoff": settings.flow_control == "software",
        "rtscts": settings.flow_control == "hardware",
    }


class SystemPortHandle:
    """A pyserial port with a blocking, cancellable chunk reader."""

    def __init__(self, name: str, ser: Any) -> None:
        self.low_latency: bool | None = None  # None: not asked for
        self.name = name
        self._ser = ser
        self._fd: int | None = None
        try:
            fd = ser.fileno()
            self._fd = fd if isinstance(fd, int) and fd >= 0 else None
        except Exception:
            self._fd = None
        self._wake_r, self._wake_w = os.pipe()
        self._wake_wr, self._wake_ww = os.pipe()  # wakes a blocked write (cancel, close)
        for end in (self._wake_r, self._wake_w, self._wake_wr, self._wake_ww):
            os.set_blocking(end, False)
        self._closing = threading.Event()
        self._write_busy = threading.Lock()  # held while a write uses the descriptor
        self._draining: threading.Event | None = None  # set once a helper thread's tcdrain returned
        self._is_tty = self._fd is not None and os.isatty(self._fd)
        self.device_id = device_of(self._fd, name)  # what a reopen must find again (port_lifecycle)
        # TIOCEXCL: another program's open of the tty fails with EBUSY while we hold it (pyserial's
        # flock binds only programs that flock too); cleared on close, so a lend hands it over
        self.exclusive: bool | None = None
        if self._is_tty and self._fd is not None:
            self.exclusive = _exclusive(self._fd, True)
        self._open_watch: tuple[holders.OpenWatch, holders.Subscription] | None = None
        # A device path or socket:// is written on its descriptor (bounded, wakeable); any other
        # handler (spy://, hwgrep:// ...) has its own write, which must not be bypassed.
        self._direct_write = type(ser).__module__ in _DIRECT_WRITE_MODULES
        if self._fd is not None and os.get_blocking(self._fd):
            os.set_blocking(self._fd, False)  # writes wait in select, never inside os.write
        self._interrupted = threading.Event()
        self._read_first = False  # set by linger: try the read before selecting
        self._generic_cancel = hasattr(ser, "cancel_read") and self._fd is None
        # socket:// has no modem lines; pyserial answers with made-up levels, we report None
        pty = _is_pty(self._fd)
        self._has_lines = not name.lower().startswith("socket://") and not pty
        # A PTY or a socket has nothing to drain: a write the descriptor takes at once is done.
        self._no_drain = self._direct_write and (pty or not self._is_tty)
        if self._fd is None:
            want = None if self._generic_cancel else _GENERIC_TIMEOUT
            if ser.timeout != want:  # on an open rfc2217 port this setter renegotiates every setting
                ser.timeout = want

    def read_chunk(self) -> bytes:
        if self._fd is not None:
            return self._read_fd(self._fd)
        return self._read_generic()

    def _take_interrupt(self) -> bool:
        if not self._interrupted.is_set():
            return False
        self._interrupted.clear()
        return True

    def _drain_wake_pipe(self) -> None:
        _empty_pipe(self._wake_r)

    def linger(self, seconds: float) -> None:
        """Wait up to ``seconds`` before the next read, sooner on ``interrupt`` (the pump lingers over
        a trickle so that one read takes several device writes). Ports without a descriptor do not
        linger."""
        if self._fd is None or self._interrupted.is_set():
            return
        with contextlib.suppress(InterruptedError):
            wait_ready((self._wake_r,), (), seconds)
        self._read_first = True

    def _read_fd(self, fd: int) -> bytes:
        if self._read_first:  # after a linger the bytes are most likely there: no select first
            self._read_first = False
            if not self._interrupted.is_set():
                try:
                    data = os.read(fd, _READ_SIZE)
                except BlockingIOError:
                    data = b""
                if data:  # b"" is no data yet (VMIN 0), not EOF: that one only counts after select
                    return self._drain(fd, data)
        while not self._take_interrupt():
            try:
                ready = wait_ready((fd, self._wake_r), (), None)
            except InterruptedError:
                continue
            if self._wake_r in ready:
                self._drain_wake_pipe()
                continue
            try:
                data = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if not data:
                raise PortEOF(messages.PORT_EOF)
            return self._drain(fd, data)
        return b""

    @staticmethod
    def _drain(fd: int, first: bytes) -> bytes:
        """Take whatever else is already queued (up to ``_DRAIN_LIMIT``): a tty hands out ~4 KiB per
        read, and one chunk per drain means far fewer lock round trips and loop wake-ups in a flood."""
        if len(first) >= _DRAIN_LIMIT or len(first) < _DRAIN_FROM:
            return first
        parts = [first]
        total = len(first)
        while total < _DRAIN_LIMIT:
            try:
                more = os.read(fd, min(_READ_SIZE, _DRAIN_LIMIT - total))
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break  # the error (EIO on unplug) surfaces on the next read, after these bytes are kept
            if not more:
                break
            parts.append(more)
            total += len(more)
        return first if len(parts) == 1 else b"".join(parts)

    def _read_generic(self) -> bytes:
        ser = self._ser
        while not self._take_interrupt():
            try:
                first = ser.read(1)
                if not first:
                    return b""  # timeout or cancel_read: let the pump look at its flags
                waiting: int = ser.in_waiting
                rest: bytes = ser.read(waiting) if waiting else b""
                return bytes(first) + rest
            except serial.SerialException as exc:
                raise OSError(errno.EIO, str(exc)) from exc
        return b""

    def interrupt(self) -> None:
        self._interrupted.set()
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        if self._generic_cancel:
            try:
                self._ser.cancel_read()
            except Exception:
                pass

    def write(self, data: bytes) -> int:
        return self.write_within(data, None)

    def write_within(
        self,
        data: bytes,
        timeout: float | None,
        cancel: threading.Event | None = None,
        *,
        stall: float | None = None,
    ) -> int:
        """Write all of ``data`` and wait until it left the driver, within ``timeout`` seconds (None:
        no bound). A device that stops taking data (a full PTY, XOFF, CTS low), ``cancel`` being set or
        the port closing makes it raise ``WriteStopped`` with the count that went out; so does no byte
        being taken for ``stall`` seconds (reason ``stalled``; on a UART at least the wire time of
        its output buffer, which a slow baud rate empties before the descriptor is writable again)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._fd is None or not self._direct_write:
            return self._write_generic(data)
        if stall is not None and self._is_tty and not self._no_drain:
            stall = max(stall, _UART_BUFFER * BITS_PER_CHAR / max(1, int(self._ser.baudrate or 1)))
        with self._write_busy:  # close() waits for this before it lets the descriptor go
            return self._write_fd(self._fd, data, deadline, cancel, stall)

    def write_nowait(self, data: bytes) -> int:
        """Write what the descriptor takes at once, never blocking: the count written (0: none, or this
        port must be written the bounded way — a real UART owes a drain, a handler its own write)."""
        fd = self._fd
        if fd is None or not self._no_drain or self._closing.is_set():
            return 0
        if not self._write_busy.acquire(blocking=False):
            return 0
        try:
            return os.write(fd, data)
        except (BlockingIOError, InterruptedError):
            return 0
        finally:
            self._write_busy.release()

    def _write_fd(
        self,
        fd: int,
        data: bytes,
        deadline: float | None,
        cancel: threading.Event | None,
        stall: float | None,
    ) -> int:
        view = memoryview(data)
        written = 0
        stalls_at = None if stall is None else time.monotonic() + stall  # pushed on by every byte taken
        while written < len(view):
            self._check_write(written, deadline, cancel)
            now = time.monotonic()
            limit = deadline
            if stalls_at is not None:
                if now >= stalls_at:
                    raise WriteStopped(written, "stalled")
                limit = stalls_at if deadline is None else min(deadline, stalls_at)
            wait = None if limit is None else max(0.0, limit - now)
            try:
                ready = wait_ready((self._wake_wr,), (fd,), wait) - {self._wake_wr}
            except InterruptedError:
                continue
            if not ready:
                self._drain_wake_writer()
                continue  # woken, or the deadline or stall time passed: the checks above say which
            try:
                n = os.write(fd, view[written:])
            except (BlockingIOError, InterruptedError):
                continue
            written += n
            if n and stall is not None:
                stalls_at = time.monotonic() + stall
        self._wait_sent(written, deadline, cancel)
        return written

    def _check_write(self, written: int, deadline: float | None, cancel: threading.Event | None) -> None:
        if self._closing.is_set():
            raise WriteStopped(written, "closed")
        if cancel is not None and cancel.is_set():
            raise WriteStopped(written, "cancelled")
        if deadline is not None and time.monotonic() >= deadline:
            raise WriteStopped(written)

    def _wait_sent(self, written: int, deadline: float | None, cancel: threading.Event | None) -> None:
        """``tcdrain``: wait until the bytes left the UART. Without flow control that takes their wire
        time; with it (XOFF, CTS low) it can take for ever, so it runs on a helper thread and is waited
        for only until the deadline — the bytes still queued in the driver are not counted as sent."""
        if not self._is_tty:
            return
        if not (self._ser.xonxoff or self._ser.rtscts) or deadline is None:
            self._tcdrain()
            return
        if self._draining is None or self._draining.is_set():
            drained = threading.Event()
            self._draining = drained
            threading.Thread(
                target=self._drain_then_set, args=(drained,), name="tx-drain", daemon=True
            ).start()
        while not self._draining.wait(max(0.0, deadline - time.monotonic())):
            queued = self._output_queued()
            self._check_write(max(0, written - queued), deadline, cancel)
        self._check_write(written, None, cancel)

    def _drain_then_set(self, drained: threading.Event) -> None:
        try:
            self._tcdrain()
        finally:
            drained.set()

    def _tcdrain(self) -> None:
        try:
            self._ser.flush()
        except (serial.SerialException, termios.error, OSError):
            pass  # the port went away: the next read reports it

    def _output_queued(self) -> int:
        try:
            raw = fcntl.ioctl(self._fd or 0, termios.TIOCOUTQ, b"\0\0\0\0")
            return int(struct.unpack("I", raw)[0])
        except OSError:
            return 0

    def _write_generic(self, data: bytes) -> int:
        try:
            n = self._ser.write(data)
            self._ser.flush()
        except serial.SerialTimeoutException as exc:
            raise WriteStopped(0) from exc
        except serial.SerialException as exc:
            raise OSError(errno.EIO, str(exc)) from exc
        return len(data) if n is None else int(n)

    def wake_writer(self) -> None:
        """Make a blocked ``write_within`` look at its cancel flag now."""
        try:
            os.write(self._wake_ww, b"x")
        except OSError:
            pass

    def _drain_wake_writer(self) -> None:
        _empty_pipe(self._wake_wr)

    def _pyserial(self, action: Callable[[], object], explain: bool = True) -> None:
        """Run a pyserial call; a network port's refusal or silence (rfc2217 answers time out) is an
        ``OSError`` the tools report, not an internal error."""
        try:
            action()
        except serial.SerialException as exc:
            raise OSError(errno.EIO, _explain(self.name, exc) if explain else str(exc)) from exc

    def _control(self, attr: str, value: Any) -> None:
        self._pyserial(lambda: setattr(self._ser, attr, value))

    def reset_input(self) -> None:
        self._pyserial(self._ser.reset_input_buffer, explain=False)

    def reset_output(self) -> None:
        self._pyserial(self._ser.reset_output_buffer, explain=False)

    def apply_settings(self, settings: SerialSettings) -> None:
        # only the values that differ: on rfc2217 every changed attribute is a negotiation round trip
        self._pyserial(lambda: self._ser.apply_settings(pyserial_kwargs(settings)))

    def _line(self, attr: str, level: bool, what: str) -> None:
        """DTR, RTS and BREAK need real modem-control lines: a PTY or a ``socket://`` port has none,
        and says so the same way every time (``unsupported``), never a silent success."""
        if not self._has_lines:
            raise DeviceError(
                ErrorCode.NOT_SUPPORTED,
                messages.NO_MODEM_LINES.format(port=self.name, what=what),
                port=self.name,
            )
        try:
            self._control(attr, level)
        except OSError as exc:
            if exc.errno in (errno.ENOTTY, errno.EINVAL, errno.ENOTSUP):
                raise DeviceError(
                    ErrorCode.NOT_SUPPORTED,
                    messages.NO_MODEM_LINES.format(port=self.name, what=what),
                    port=self.name,
                ) from exc
            raise

    def set_dtr(self, level: bool) -> None:
        self._line("dtr", level, "DTR")

    def set_rts(self, level: bool) -> None:
        self._line("rts", level, "RTS")

    def set_break(self, level: bool) -> None:
        self._line("break_condition", level, "BREAK")

    def modem_lines(self) -> dict[str, bool | None]:
        lines: dict[str, bool | None] = {}
        if not self._has_lines:
            return {"cts": None, "dsr": None, "ri": None, "cd": None}
        for name in ("cts", "dsr", "ri", "cd"):
            try:
                lines[name] = bool(getattr(self._ser, name))
            except Exception:
                lines[name] = None
        return lines

    def watch_opens(self, callback: Callable[[], None]) -> bool:
        """Call ``callback`` (on another thread) after each open of this device node by another
        process — one TIOCEXCL does not stop (root), or on a driver without it — until ``close``.
        False where the node cannot be watched."""
        watch = holders.OpenWatch.shared() if self.device_id is not None else None
        if watch is None or self.device_id is None or self._closing.is_set():
            return False
        sub = watch.add(self.device_id[0], callback)
        if sub is None:
            return False
        self._open_watch = (watch, sub)
        return True

    def close(self) -> None:
        self._closing.set()  # a write blocked on a device that stopped reading ends now
        watching, self._open_watch = self._open_watch, None
        if watching is not None:
            watching[0].remove(watching[1])
        self.wake_writer()
        if self._draining is not None and not self._draining.is_set():
            with contextlib.suppress(Exception):  # discard what flow control held: releases tcdrain
                self._ser.reset_output_buffer()
        if self._write_busy.acquire(timeout=_CLOSE_WAIT):  # the woken writer has let go of the fd
            self._write_busy.release()
        if self.exclusive and self._fd is not None:  # a PTY keeps the flag past our close
            self.exclusive = False  # once: a second close must not touch a reused descriptor number
            _exclusive(self._fd, False)
        try:
            self._ser.close()
        finally:
            for fd in (self._wake_r, self._wake_w, self._wake_wr, self._wake_ww):
                try:
                    os.close(fd)
                except OSError:
                    pass


def _exclusive(fd: int, on: bool) -> bool:
    """Set (TIOCEXCL) or clear (TIOCNXCL) a tty's exclusive mode: whether that worked."""
    try:
        fcntl.ioctl(fd, termios.TIOCEXCL if on else termios.TIOCNXCL)
    except OSError:
        return False
    return True


def _empty_pipe(fd: int) -> None:
    """Read a non-blocking wake pipe until it is empty (or gone)."""
    try:
        while os.read(fd, 512):
            pass
    except OSError:
        pass


def _is_pty(fd: int | None) -> bool:
    """A pseudo-terminal (Unix98 ``/dev/pts/N``): no modem-control lines behind it."""
    if fd is None:
        return False
    try:
        return 136 <= os.major(os.fstat(fd).st_rdev) <= 143
    except OSError:
        return False


def _is_rfc2217(port: str) -> bool:
    return port[:10].lower() == "rfc2217://"


def _explain(port: str, exc: BaseException) -> str:
    """pyserial's text, plus the way out when an RFC 2217 server left a line change unconfirmed."""
    text = str(exc)
    if _is_rfc2217(port) and _CONTROL_TIMEOUT in text and "ign_set_control" not in port:
        url = port + ("&" if "?" in port else "?") + "ign_set_control"
        return f"{text}: " + messages.RFC2217_CONTROL_HINT.format(url=url)
    return text


def keep_lines_on_close(handle: object) -> bool:
    """Clear HUPCL on a local tty's descriptor, so closing it leaves DTR and RTS as they are and the
    next open (which raises them) makes no edge: a board with an auto-reset circuit is not reset a
    second time. False when the handle has no tty descriptor or the driver refuses. Blocking."""
    fd = handle._fd if isinstance(handle, SystemPortHandle) else None
    if fd is None or _is_pty(fd):
        return False
    try:
        attrs = termios.tcgetattr(fd)
        attrs[2] &= ~termios.HUPCL
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    except (termios.error, OSError):
        return False
    return True
