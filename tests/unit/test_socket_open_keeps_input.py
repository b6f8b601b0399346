"""What a network peer sends the moment it accepts a socket:// connection reaches the reader.

pyserial's socket handler ends ``open()`` with ``reset_input_buffer()``, which reads and drops what
has arrived by then: ser2net's "Device open failure" (seen lost in 5 of 6 reconnects on a loaded
machine), a device server's banner. The test makes the banner arrive before that step, every time:
the handler's ``_reconfigure_port`` (called just before it) waits until the socket is readable."""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import serial.urlhandler.protocol_socket as protocol_socket

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.system_open import SystemOpener

BANNER = b"Device open failure: Value or file not found\r\n"


@pytest.fixture
def banner_server() -> Iterator[int]:
    """A TCP server that sends BANNER on accept, then keeps the connection open until told."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(BANNER)
            done.wait(10)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        thread.join(10)
        listener.close()


def test_the_bytes_a_peer_sends_on_accept_are_read_not_dropped(
    banner_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = protocol_socket.Serial._reconfigure_port

    def banner_first(self: Any, *args: Any, **kwargs: Any) -> Any:
        select.select([self._socket], [], [], 10)  # the banner is there before open's last step
        return real(self, *args, **kwargs)

    monkeypatch.setattr(protocol_socket.Serial, "_reconfigure_port", banner_first)
    handle = SystemOpener().open(f"socket://127.0.0.1:{banner_server}", SerialSettings())
    try:
        got = b""
        while len(got) < len(BANNER):
            chunk = handle.read_chunk()
            assert chunk, "end of file before the banner"
            got += chunk
        assert got == BANNER
    finally:
        handle.close()


def test_reset_input_is_still_the_handlers_own_after_open(banner_server: int) -> None:
    """Only open keeps what arrived: the port's reset_input (flush, capture_boot's mark) purges."""
    handle = SystemOpener().open(f"socket://127.0.0.1:{banner_server}", SerialSettings())
    try:
        assert "reset_input_buffer" not in vars(handle._ser)  # the class's method again
    finally:
        handle.close()
