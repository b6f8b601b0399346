"""Rfc2217Mirror: a live connection served on a loopback TCP port as an RFC 2217 server, so a
flasher or terminal that speaks ``rfc2217://`` (esptool, mpremote, miniterm, idf.py) gets the real
port through serial-mcp while every byte both ways stays in the ring, the cursors and the capture.

The Telnet/RFC 2217 side is pyserial's own ``serial.rfc2217.PortManager``; it drives a ``LentPort``
(``rfc2217_port``) that applies settings and lines to the connection's handle at once. Threads:

- the server thread accepts (one client at a time: a second one is closed at once), reads the
  client's bytes, passes them through the PortManager's filter (a fast path copies the runs with no
  command in them, escaped 0xFF included) and writes the data to the port in order with the
  commands between them;
- the sender thread sends what the pump received to the client (IAC doubled). The pump only
  enqueues (its listener never blocks); a client that stops reading for ``QUEUE_LIMIT`` bytes loses
  the excess, counted in ``rx_dropped`` and recorded as a marker.

While a client with write access is attached the connection is lent (``conn.lent_to``): the agent's
writing tools refuse with ``port_lent`` unless forced, standing responders are held. ``read_only``
(the server's ``--read-only``): the client's writes are dropped and counted, its line and setting
changes acknowledged but not applied, and the connection is not lent. ``close`` ends both threads
and every socket; the connection runs it when it closes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import threading
from collections import deque
from typing import Any

from serial.rfc2217 import IAC, M_NORMAL, PortManager

from serial_mcp import messages
from serial_mcp.core.eventlog import LogEvent
from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.peer_process import PeerSocket, describe_peer, may_attach, peer_socket
from serial_mcp.serial.rfc2217_port import SOURCE, LentPort

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
QUEUE_LIMIT = 8 << 20  # RX bytes waiting for a client that does not read, before they are dropped
MODEM_POLL_S = 0.5  # how often input lines are checked, on a port that has any
RECV_SIZE = 1 << 16
SUBNEGOTIATION_LIMIT = 4096  # RFC 2217's options are <= 10 bytes: a longer one is not a client's
_IAC_DOUBLED = IAC + IAC


class Rfc2217Mirror:
    """One RFC 2217 server for one connection; ``url`` is what the client opens."""

    kind = "rfc2217"
    path: str | None = None  # no PTY: the result names ``url``

    def __init__(
        self,
        conn: Connection,
        *,
        read_only: bool,
        esp_reset: bool = False,
        host: str = LOOPBACK,
        port: int = 0,
        any_user: bool | None = None,
    ) -> None:
        self.conn = conn
        self.any_user = any_user  # None: the process's --mirror-any-user (serial.peer_process)
        self.read_only = read_only
        self.esp_reset = esp_reset  # see rfc2217_port: the ESP download reset played on the port
        self._listener = socket.create_server((host, port), backlog=1)
        self.host, self.port = self._listener.getsockname()[:2]
        self.url = f"rfc2217://{self.host}:{self.port}"
        self.client: str | None = None  # the attached client: 'program "esptool" (pid 4242) at host:port'
        self.clients = 0  # attached over the mirror's life
        self.refused = 0  # turned away while another was attached
        self.refused_users = 0  # turned away: another user's, or a peer whose uid could not be found
        self.rx_forwarded = 0
        self.rx_dropped = 0
        self.tx_forwarded = 0
        self.tx_dropped = 0  # read-only: the client's writes, not sent
        self._sock: socket.socket | None = None
        self._manager: Any = None  # PortManager of the attached client
        self._port: LentPort | None = None
        self._send_lock = threading.Lock()  # PortManager's answers and RX data share the socket
        self._cond = threading.Condition()
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._stopping = False
        self._stop_r, self._stop_w = os.pipe()
        self._has_modem_lines = _has_modem_lines(conn)
        conn.add_listener(self.on_event)
        self._server = threading.Thread(target=self._serve, name=f"rfc2217-{conn.id}", daemon=True)
        self._sender = threading.Thread(target=self._send_loop, name=f"rfc2217-tx-{conn.id}", daemon=True)
        self._server.start()
        self._sender.start()

    def describe(self, *, owner: bool = True) -> dict[str, Any]:
        """What get_status shows; the URL only to the connection's owner (no one else may use it)."""
        url = {"url": self.url} if owner else {}
        return {
            **url, "client": self.client, "read_only": self.read_only, "esp_reset": self.esp_reset,
            "rx_forwarded": self.rx_forwarded, "rx_dropped": self.rx_dropped,
            "tx_forwarded": self.tx_forwarded, "tx_dropped": self.tx_dropped,
            "refused_users": self.refused_users,
        }  # fmt: skip

    def live_settings(self) -> SerialSettings | None:
        """The settings the attached client has put on the port, where they differ from the
        connection's own (which come back when it leaves); None otherwise."""
        port = self._port
        if port is None or self.read_only or port.settings == self.conn.settings:
            return None
        return port.settings

    # --- RX: pump thread → client ---------------------------------------------------------------

    def on_event(self, event: LogEvent, payload: bytes | None) -> None:
        """Connection listener (pump thread, lock held): enqueue RX for the client, never block."""
        if event.type != "rx" or not payload:
            return
        with self._cond:
            if self._sock is None:
                return
            if self._queued + len(payload) > QUEUE_LIMIT:
                self.rx_dropped += len(payload)
                return
            self._queue.append(payload)
            self._queued += len(payload)
            self._cond.notify()

    def _purge_pending(self) -> None:
        with self._cond:
            self._queue.clear()
            self._queued = 0

    def _send_loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                chunks = list(self._queue)
                self._queue.clear()
                self._queued = 0
                sock = self._sock
            data = b"".join(chunks)
            if sock is None:
                continue
            try:
                self._send(sock, data.replace(IAC, _IAC_DOUBLED))
            except OSError:  # the client went away: the server thread sees it and detaches
                continue
            self.rx_forwarded += len(data)

    def _send(self, sock: socket.socket, data: bytes) -> None:
        with self._send_lock:
            sock.sendall(data)

    def write(self, data: bytes) -> None:
        """PortManager's connection: its Telnet answers to the client (server thread)."""
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                self._send(sock, data)

    # --- the server thread ----------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while True:
                sock = self._sock
                watch: list[Any] = [self._listener, self._stop_r] + ([sock] if sock is not None else [])
                timeout = MODEM_POLL_S if sock is not None and self._has_modem_lines else None
                try:
                    ready, _, _ = select.select(watch, [], [], timeout)
                except (OSError, ValueError):
                    return
                if self._stop_r in ready:
                    return
                if self._listener in ready:
                    self._accept()
                if sock is not None and sock in ready:
                    self._from_client(sock)
                if self._sock is not None and self._has_modem_lines and self._manager is not None:
                    with contextlib.suppress(Exception):
                        self._manager.check_modem_lines()
        except Exception:  # the mirror must never take the connection down with it
            log.exception("rfc2217 mirror of %s failed", self.conn.id)
        finally:
            self._detach("mirror closed")

    def _accept(self) -> None:
        try:
            sock, addr = self._listener.accept()
        except OSError:
            return
        peer = peer_socket(sock)  # first: a refused peer builds nothing, locks nobody out
        if not may_attach(peer, self.any_user):
            self._refuse_user(sock, addr, peer)
            return
        if self._sock is not None:
            self.refused += 1
            log.info(
                "rfc2217 mirror of %s: %s:%s refused, %s is attached", self.conn.id, *addr[:2], self.client
            )
            with contextlib.suppress(OSError):
                sock.close()
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        program = describe_peer(sock, peer)  # 'program "esptool" (pid 4242)', where /proc shows it
        client = f"{program} at {addr[0]}:{addr[1]}" if program else f"{addr[0]}:{addr[1]}"
        port = LentPort(
            self.conn, apply=not self.read_only, purge_pending=self._purge_pending, esp_reset=self.esp_reset
        )
        held = len(self.conn.responders)
        with self._cond:
            self._sock, self._port, self.client = sock, port, client
        self.clients += 1
        if not self.read_only:
            self.conn.lent_to = client
        self._manager = PortManager(port, self)  # sends its Telnet option requests at once
        self.conn.record(
            "marker", label="rfc2217 attach", client=client, read_only=self.read_only, responders_held=held
        )

    def _refuse_user(self, sock: socket.socket, addr: Any, peer: PeerSocket | None) -> None:
        """Tell a peer that is not the server's user why it is closed, and close it."""
        self.refused_users += 1
        who = (
            messages.MIRROR_PEER_UNKNOWN
            if peer is None
            else messages.MIRROR_PEER_GONE
            if peer.inode == "0"
            else f"uid {peer.uid}"
        )
        log.warning(
            "rfc2217 mirror of %s: %s:%s refused: %s (the mirror serves uid %d and root; "
            "--mirror-any-user lets an unidentified peer in)", self.conn.id, *addr[:2], who, os.geteuid()
        )  # fmt: skip
        text = messages.MIRROR_REFUSED_USER.format(who=who, uid=os.geteuid())
        with contextlib.suppress(OSError):
            sock.setblocking(False)  # a refusal never waits for a peer that does not read
            sock.send(text.encode())
            sock.shutdown(socket.SHUT_WR)
            sock.recv(RECV_SIZE)  # what it sent already, read and dropped: a close with unread
        with contextlib.suppress(OSError):  # data would reset the connection before it reads why
            sock.close()

    def _from_client(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(RECV_SIZE)
        except OSError as exc:
            self._detach(f"connection lost: {exc}")
            return
        if not data:
            self._detach("client left")
            return
        manager = self._manager
        out = bytearray()
        i, n = 0, len(data)
        while i < n:
            if manager.mode == M_NORMAL and manager.suboption is None:
                j = data.find(IAC, i)  # fast path: a run of plain data
                if j < 0:
                    out += data[i:] if i else data
                    break
                out += data[i:j]
                if data[j + 1 : j + 2] == IAC:  # an escaped 0xFF is data: no command, stay fast
                    out += IAC
                    i = j + 2
                    continue
                i = j
                self._to_port(out)  # data before a command reaches the port before it acts
                out = bytearray()
            try:
                for byte in manager.filter(data[i : i + 1]):
                    out += byte
            except Exception as exc:  # a malformed command: dropped, the session goes on
                log.info("rfc2217 mirror of %s: bad command from %s: %s", self.conn.id, self.client, exc)
                manager.mode, manager.suboption = M_NORMAL, None
            if manager.suboption is not None and len(manager.suboption) > SUBNEGOTIATION_LIMIT:
                self._to_port(out)  # the data before it was the client's own
                reason = messages.MIRROR_SUBNEGOTIATION_TOO_LONG.format(limit=SUBNEGOTIATION_LIMIT)
                log.warning("rfc2217 mirror of %s: %s dropped: %s", self.conn.id, self.client, reason)
                self._detach(reason)
                return
            i += 1
        self._to_port(out)

    def _to_port(self, data: bytearray) -> None:
        if not data:
            return
        if self.read_only or self.conn.state != "open":
            self.tx_dropped += len(data)
            return
        chunk = bytes(data)
        try:
            self.conn.send_now(chunk, source=SOURCE)
        except (OSError, TimeoutError) as exc:
            self.tx_dropped += len(data)
            log.info("rfc2217 mirror write to %s failed: %s", self.conn.id, exc)
            return
        self.tx_forwarded += len(chunk)

    def _detach(self, reason: str) -> None:
        if self._stopping:  # close() shut the socket: the client did not leave, it was cut off
            reason = "mirror closed"
        with self._cond:
            sock, port, client = self._sock, self._port, self.client
            self._sock = self._port = self._manager = None
            self.client = None
            self._queue.clear()
            self._queued = 0
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.close()
        if port is not None and self.conn.state == "open":
            try:
                port.restore()
            except Exception as exc:  # a port going away: nothing left to restore
                log.info("rfc2217 mirror of %s: restoring settings: %s", self.conn.id, exc)
        self.conn.record(
            "marker", label="rfc2217 detach", client=client, reason=reason,
            rx_forwarded=self.rx_forwarded, rx_dropped=self.rx_dropped,
            tx_forwarded=self.tx_forwarded, tx_dropped=self.tx_dropped,
        )  # fmt: skip
        # given back last: whoever sees the port free again finds its settings restored and the detach logged
        if self.conn.lent_to == client:
            self.conn.lent_to = None

    # --- end ------------------------------------------------------------------------------------

    def close(self) -> None:
        """End the client, both threads and every socket (blocking; run off the event loop)."""
        self.conn.remove_listener(self.on_event)
        with self._cond:
            self._stopping = True
            sock = self._sock
            self._cond.notify_all()
        if sock is not None:  # wakes a sender blocked on a client that stopped reading
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        self._server.join(5)
        self._sender.join(5)
        with contextlib.suppress(OSError):
            self._listener.close()
        for fd in (self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def _has_modem_lines(conn: Connection) -> bool:
    try:
        return any(v is not None for v in conn.handle.modem_lines().values())
    except Exception:
        return False
