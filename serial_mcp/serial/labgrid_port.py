"""``labgrid://PLACE[/RESOURCE]``: a board in a labgrid lab, acquired, reached and released (issue 25).

``LabgridOpener.open`` asks the coordinator (``serial.labgrid_client``) for the place, acquires it for
this server's labgrid identity (``host/user``) unless this server already holds it, finds the place's
``NetworkSerialPort`` (one by name when it has several) and opens it over RFC 2217 through the
``SystemOpener`` exactly as an ``rfc2217://`` URL (``?ign_set_control``: ser2net does not confirm line
control for every device), so every serial-mcp feature works on it. A place held by anyone else is
``busy`` naming the holder and since when. Each reconnect opens through here again, so it asks the
coordinator where the serial port is *now* (an exporter that restarted serves it on a new port).

The place stays acquired across reconnects; it is released when the last connection that holds it
closes (``LeaseHolder``: the manager registers that as a closer), and only if this server acquired it.
A server that dies leaves labgrid's own lock: the ``busy`` refusal says how to release it.
"""

from __future__ import annotations

import datetime
import difflib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from serial_mcp import messages
from serial_mcp.core.port_url import labgrid_parts
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import ErrorCode, PortError, SerialMcpError
from serial_mcp.serial import labgrid_power
from serial_mcp.serial.labgrid_client import (
    LabClient,
    LabRefused,
    PlaceView,
    ResourceView,
    client_for,
    identity,
    load_labgrid,
)
from serial_mcp.serial.system import SystemPortHandle
from serial_mcp.serial.system_open import SystemOpener

log = logging.getLogger(__name__)

SERIAL_CLASS = "NetworkSerialPort"
ENV_COORDINATOR = "LG_COORDINATOR"  # labgrid's own variable


class Lease:
    """A place this server acquired: released when the last connection holding it lets go."""

    def __init__(self, client: LabClient, place: str, acquired_here: bool) -> None:
        self.client = client
        self.place = place
        self.acquired_here = acquired_here
        self.holders = 0
        self.released = False
        self._lock = threading.Lock()

    def hold(self) -> Callable[[], None]:
        """One more connection holds the place; call the returned function when it closes."""
        with self._lock:
            self.holders += 1
        done = threading.Event()

        def let_go() -> None:
            if done.is_set():
                return
            done.set()
            with self._lock:
                self.holders -= 1
                last = self.holders <= 0
            if last:
                self.release()

        return let_go

    def release(self) -> None:
        """Give the place back to the lab (only when this server acquired it); idempotent."""
        with self._lock:
            if self.released:
                return
            self.released = True
        if not self.acquired_here:
            return
        try:
            self.client.release(self.place)
            log.info("released labgrid place %s", self.place)
        except (SerialMcpError, LabRefused) as exc:  # the port is closed either way; say what is left
            log.warning(messages.LABGRID_RELEASE_FAILED.format(place=self.place, error=exc))


class LabgridPortHandle:
    """The place's serial port (an RFC 2217 ``SystemPortHandle``) plus what the place offers besides:
    its power switch and digital outputs (``labgrid_power``), and its lease."""

    def __init__(self, name: str, inner: SystemPortHandle, lease: Lease, controls: labgrid_power.Controls):
        self.name = name
        self.inner = inner
        self.lease = lease
        self.controls = controls

    @property
    def low_latency(self) -> bool | None:
        return self.inner.low_latency

    def read_chunk(self) -> bytes:
        return self.inner.read_chunk()

    def interrupt(self) -> None:
        self.inner.interrupt()

    def write(self, data: bytes) -> int:
        return self.inner.write(data)

    def write_within(
        self,
        data: bytes,
        timeout: float | None,
        cancel: threading.Event | None = None,
        *,
        stall: float | None = None,
    ) -> int:
        return self.inner.write_within(data, timeout, cancel, stall=stall)

    def wake_writer(self) -> None:
        self.inner.wake_writer()

    def reset_input(self) -> None:
        self.inner.reset_input()

    def reset_output(self) -> None:
        self.inner.reset_output()

    def apply_settings(self, settings: SerialSettings) -> None:
        self.inner.apply_settings(settings)

    def set_dtr(self, level: bool) -> None:
        self.inner.set_dtr(level)

    def set_rts(self, level: bool) -> None:
        self.inner.set_rts(level)

    def set_break(self, level: bool) -> None:
        self.inner.set_break(level)

    def modem_lines(self) -> dict[str, bool | None]:
        return self.inner.modem_lines()

    def close(self) -> None:
        self.inner.close()  # the place stays acquired: a reconnect reopens it (see ``hold_lease``)

    # LeaseHolder
    def hold_lease(self) -> Callable[[], None]:
        return self.lease.hold()

    # LabControls
    def power(self, on: bool, name: str | None = None) -> None:
        self.controls.power(on, name)

    def digital_output(self, level: bool, name: str | None = None) -> None:
        self.controls.digital_output(level, name)


class LabgridOpener:
    """Opens ``labgrid://`` ports through the coordinator at ``address`` (``--labgrid-coordinator``;
    None: ``LG_COORDINATOR``, read at each open)."""

    def __init__(self, address: str | None = None, system: SystemOpener | None = None) -> None:
        self.address = address
        self.system = system or SystemOpener()
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()

    def coordinator(self) -> str | None:
        return self.address or os.environ.get(ENV_COORDINATOR) or None

    def client(self, port: str = "labgrid://") -> LabClient:
        load_labgrid()  # not installed: say how, before anything else
        address = self.coordinator()
        if address is None:
            raise PortError(
                ErrorCode.UNAVAILABLE, messages.LABGRID_NO_COORDINATOR.format(port=port), port=port
            )
        return client_for(address)

    def open(self, port: str, settings: SerialSettings) -> LabgridPortHandle:
        place_name, resource = labgrid_parts(port)
        client = self.client(port)
        place = self._place(client, place_name)
        lease = self._lease(client, place)
        try:
            serial = self._serial_resource(client, place_name, resource)
            inner = self.system.open(_rfc2217_url(serial), settings)
        except BaseException:
            if lease.holders == 0:  # no connection holds it yet: this open took it, so it gives it back
                self._drop(lease)
            raise
        controls = labgrid_power.Controls(lambda: client.resources(place_name), place_name)
        return LabgridPortHandle(port, inner, lease, controls)

    def places(self) -> list[PlaceView]:
        """The coordinator's places (``list_ports``); [] with no coordinator configured."""
        if self.coordinator() is None:
            return []
        return self.client().places()

    def resource_host(self, place: PlaceView) -> str | None:
        """The exporter (host) of the place's serial resource, where the coordinator says so."""
        for exporter, _group, cls, _name in place.acquired_resources:
            if cls == SERIAL_CLASS:
                return exporter
        for match in place.matches:  # not acquired: the exporter its match names
            head = match.split("/", 1)[0]
            if head and "*" not in head:
                return head
        return None

    # --- the steps of an open ----------------------------------------------------------------------

    def _place(self, client: LabClient, name: str) -> PlaceView:
        places = client.places()
        found = next((p for p in places if p.name == name), None)
        if found is None:
            names = [p.name for p in places]
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise PortError(
                ErrorCode.PORT_NOT_FOUND,
                messages.LABGRID_PLACE_NOT_FOUND.format(
                    place=name, address=client.address, hint=hint, places=", ".join(names) or "none"
                ),
            )
        return found

    def _lease(self, client: LabClient, place: PlaceView) -> Lease:
        """The place held for this server: already (a reconnect, a second resource, or labgrid-client
        run as this identity), or acquired now."""
        me = identity()
        with self._lock:
            lease = self._leases.get(place.name)
            if lease is not None and not lease.released and place.acquired == me:
                return lease
            if place.acquired is not None and place.acquired != me:
                raise _busy(client, place, me)
            acquired_here = place.acquired is None
            if acquired_here:
                try:
                    client.acquire(place.name)
                except LabRefused as exc:  # lost a race, a reservation, resources held by another place
                    again = client.place(place.name)
                    if again is not None and again.acquired and again.acquired != me:
                        raise _busy(client, again, me) from None
                    raise PortError(
                        ErrorCode.PORT_BUSY,
                        messages.LABGRID_ACQUIRE_REFUSED.format(place=place.name, error=exc, me=me),
                    ) from None
                log.info("acquired labgrid place %s as %s", place.name, me)
            if lease is not None and not lease.released:  # taken from us meanwhile (a kick), taken back
                lease.acquired_here = lease.acquired_here or acquired_here
                return lease
            lease = self._leases[place.name] = Lease(client, place.name, acquired_here)
            return lease

    def _drop(self, lease: Lease) -> None:
        with self._lock:
            if self._leases.get(lease.place) is lease:
                del self._leases[lease.place]
        lease.release()

    def _serial_resource(self, client: LabClient, place: str, name: str | None) -> ResourceView:
        resources = client.resources(place)
        serial = [r for r in resources if r.cls == SERIAL_CLASS]
        if name is not None:
            picked = [r for r in serial if r.name == name]
            if not picked:
                names = [r.name for r in serial]
                close = difflib.get_close_matches(name, names, n=1)
                raise PortError(
                    ErrorCode.PORT_NOT_FOUND,
                    messages.LABGRID_RESOURCE_NOT_FOUND.format(
                        place=place,
                        name=name,
                        hint=f" Did you mean {close[0]!r}?" if close else "",
                        names=", ".join(names) or "none",
                    ),
                )
            serial = picked
        if not serial:
            held = ", ".join(f"{r.cls} {r.name}" for r in resources) or "none"
            raise PortError(
                ErrorCode.PORT_NOT_FOUND, messages.LABGRID_NO_SERIAL.format(place=place, resources=held)
            )
        if len(serial) > 1:
            several = ", ".join(r.name for r in serial)
            raise PortError(
                ErrorCode.PORT_AMBIGUOUS, messages.LABGRID_SERIAL_AMBIGUOUS.format(place=place, names=several)
            )
        found = serial[0]
        if not found.avail or not found.args.get("host") or not found.args.get("port"):
            raise PortError(
                ErrorCode.UNAVAILABLE,
                messages.LABGRID_SERIAL_UNAVAILABLE.format(
                    place=place, name=found.name, exporter=found.exporter, address=client.address
                ),
            )
        return found


def _rfc2217_url(resource: ResourceView) -> str:
    """The URL the ``SystemOpener`` opens (and judges, like any ``rfc2217://``) for the resource."""
    host, port = str(resource.args["host"]), int(resource.args["port"])
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if resource.args.get("protocol", "rfc2217") == "raw":
        return f"socket://{host}:{port}"
    return f"rfc2217://{host}:{port}?ign_set_control"


def _busy(client: LabClient, place: PlaceView, me: str) -> SerialMcpError:
    since = datetime.datetime.fromtimestamp(place.changed, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return PortError(
        ErrorCode.PORT_BUSY,
        messages.LABGRID_BUSY.format(
            place=place.name, holder=place.acquired, since=since, me=me, address=client.address
        ),
        holder=place.acquired,
        since=place.changed,
    )


def lab_opener_of(opener: Any) -> LabgridOpener | None:
    """The ``LabgridOpener`` inside a front door's opener (behind its allowlist guard and router)."""
    seen = 0
    while opener is not None and seen < 8:
        if isinstance(opener, LabgridOpener):
            return opener
        schemes = getattr(opener, "schemes", None)
        found = schemes.get("labgrid") if isinstance(schemes, dict) else None
        if isinstance(found, LabgridOpener):
            return found
        opener = getattr(opener, "inner", None)
        seen += 1
    return None
