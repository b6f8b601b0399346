"""SystemOpener: opening real ports with pyserial ``serial_for_url`` — device paths (the very file the
allowlist judged, pinned against a swapped link), ``loop://``, ``socket://``, ``rfc2217://`` — with
RS-485 and low-latency switched on through the driver, and open failures turned into stable codes.
The open port is a ``SystemPortHandle`` (``serial/system.py``)."""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

import serial

from serial_mcp import messages
from serial_mcp.core.port_url import OWN_SCHEMES, PYSERIAL_SCHEMES, check_scheme, parse_port
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import AccessError, DeviceError, ErrorCode, InvalidArgument, PortError, SerialMcpError
from serial_mcp.serial.judged import JudgedPath
from serial_mcp.serial.system import (
    _GENERIC_TIMEOUT,
    SystemPortHandle,
    _explain,
    _is_rfc2217,
    pyserial_kwargs,
)


class SystemOpener:
    """Opens real ports with pyserial; device paths are locked exclusively against other processes.

    Only device paths, ``socket://``, ``rfc2217://``, ``loop://`` and the schemes in
    ``enabled_schemes`` reach ``serial_for_url`` (checked here too, not only by the router); network
    and loop URLs are opened as rebuilt from their checked parts. A ``JudgedPath`` is opened as the
    very file the allowlist judged (see ``serial.judged``)."""

    def __init__(self, enabled_schemes: frozenset[str] = frozenset()) -> None:
        self.enabled_schemes = frozenset(enabled_schemes)

    def open(self, port: str, settings: SerialSettings) -> SystemPortHandle:
        scheme = check_scheme(port, self.enabled_schemes)
        if scheme in OWN_SCHEMES and scheme not in self.enabled_schemes:  # never pyserial's handler for them
            offered = ", ".join(sorted(PYSERIAL_SCHEMES))
            refusal = messages.URL_SCHEME_REFUSED.format(scheme=scheme, offered=offered)
            raise AccessError(ErrorCode.NOT_ALLOWED, refusal)
        name = parse_port(port, self.enabled_schemes).open_name
        is_url = scheme is not None
        kwargs = pyserial_kwargs(settings)
        if _is_rfc2217(name):
            kwargs["timeout"] = _GENERIC_TIMEOUT  # set before open: setting it later renegotiates
        pin = _pin(port) if isinstance(port, JudgedPath) else None
        try:
            ser = serial.serial_for_url(pin.name if pin else name, do_not_open=True, **kwargs)
            if not is_url and os.name == "posix":
                ser.exclusive = True
            if type(ser).__module__ in _KEEPS_INPUT:
                _open_keeping_input(ser)
            else:
                ser.open()
        except (serial.SerialException, OSError, ValueError) as exc:
            raise classify_open_error(str(port), exc) from exc
        finally:
            if pin is not None:
                pin.close()
        if isinstance(port, JudgedPath) and not _same_file(ser, port.identity):
            ser.close()
            raise AccessError(
                ErrorCode.NOT_ALLOWED, messages.PORT_CHANGED.format(port=str(port)), port=str(port)
            )
        if settings.rs485 is not None:
            _enable_rs485(str(port), ser, settings.rs485)
        handle = SystemPortHandle(str(port), ser)
        if settings.low_latency:
            try:
                ser.set_low_latency_mode(True)
                handle.low_latency = True
            except (AttributeError, OSError, ValueError, NotImplementedError):
                handle.low_latency = False  # reported by get_status; not an error: the port works
        return handle


# pyserial's socket:// open ends with reset_input_buffer(), which reads and drops whatever the peer
# sent meanwhile: ser2net's "Device open failure", a device server's banner, the first line of a
# board that talks at once. A TCP connection that did not exist a moment ago holds nothing stale, so
# those bytes are kept for the pump (lost before, silently, whenever they beat the end of open).
_KEEPS_INPUT = ("serial.urlhandler.protocol_socket",)


def _open_keeping_input(ser: Any) -> None:
    ser.reset_input_buffer = lambda: None  # this instance, for its open only
    try:
        ser.open()
    finally:
        del ser.reset_input_buffer


class _Pin:
    """An ``O_PATH`` descriptor of a judged device: opening ``/proc/self/fd/N`` opens that inode,
    with no second lookup of its name (Linux)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.name = f"/proc/self/fd/{fd}"

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _pin(port: JudgedPath) -> _Pin | None:
    """Pin the judged path without following a link and check it is still the judged file; None
    where ``O_PATH`` or ``/proc`` is missing (the opened descriptor is checked instead)."""
    o_path = getattr(os, "O_PATH", None)
    if o_path is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = os.open(port, o_path | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise PortError(
            ErrorCode.PORT_NOT_FOUND, messages.PORT_NOT_FOUND.format(port=str(port)), port=str(port)
        ) from None
    except OSError as exc:
        raise AccessError(
            ErrorCode.NOT_ALLOWED, messages.PORT_CHANGED.format(port=str(port)), port=str(port)
        ) from exc
    pin = _Pin(fd)
    st = os.fstat(fd)
    if stat.S_ISLNK(st.st_mode) or (st.st_dev, st.st_ino) != port.identity:
        pin.close()
        raise AccessError(ErrorCode.NOT_ALLOWED, messages.PORT_CHANGED.format(port=str(port)), port=str(port))
    return pin


def _same_file(ser: Any, identity: tuple[int, int] | None) -> bool:
    """Whether the opened port's descriptor is the judged file (ports without one: nothing to check)."""
    try:
        fd = ser.fileno()
    except Exception:
        return True
    if not isinstance(fd, int) or fd < 0:
        return True
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino) == identity


def _enable_rs485(port: str, ser: Any, spec: dict[str, Any]) -> None:
    """Switch the driver into RS-485 mode (Linux TIOCSRS485); a port that cannot is closed and refused."""
    from serial.rs485 import RS485Settings

    try:
        ser.rs485_mode = RS485Settings(
            rts_level_for_tx=spec.get("rts_level_for_tx", True),
            rts_level_for_rx=spec.get("rts_level_for_rx", False),
            loopback=spec.get("loopback", False),
            delay_before_tx=spec.get("delay_before_tx"),
            delay_before_rx=spec.get("delay_before_rx"),
        )
    except (serial.SerialException, OSError, ValueError, NotImplementedError) as exc:
        ser.close()
        raise DeviceError(
            ErrorCode.RS485_UNSUPPORTED, messages.RS485_UNSUPPORTED.format(port=port, error=exc), port=port
        ) from exc


def classify_open_error(port: str, exc: BaseException) -> SerialMcpError:
    """Turn pyserial's open failures into stable codes: port_not_found, port_busy, permission_denied ..."""
    code = getattr(exc, "errno", None)
    text = str(exc)
    if code == errno.ENOENT or "No such file" in text or "could not find" in text.lower():
        return PortError(ErrorCode.PORT_NOT_FOUND, messages.PORT_NOT_FOUND.format(port=port), port=port)
    if code in (errno.EBUSY, errno.EAGAIN) or "exclusively lock" in text or "Resource busy" in text:
        return PortError(ErrorCode.PORT_BUSY, messages.PORT_BUSY_OTHER.format(port=port), port=port)
    if code == errno.EACCES or "Permission denied" in text:
        return AccessError(ErrorCode.PERMISSION_DENIED, messages.PORT_PERMISSION.format(port=port), port=port)
    if isinstance(exc, ValueError) or "invalid URL" in text or "expected a string" in text:
        return InvalidArgument(messages.PORT_BAD_URL.format(port=port, error=text), port=port)
    return PortError(
        ErrorCode.PORT_OPEN_FAILED,
        messages.PORT_OPEN_FAILED.format(port=port, error=_explain(port, exc)),
        port=port,
    )
