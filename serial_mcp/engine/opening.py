"""Opening a port the way ``open`` and ``open_profile`` both do: resolve the name, apply a device
profile's defaults under the call's own fields, validate everything, open, bind the profile,
start recording. Profiles are remembered per device (issue 5): a bare open of a well-identified
USB device reuses its profile or creates one; weak identities stay transient.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import anyio

from serial_mcp import messages
from serial_mcp.core.connection_options import CODEC_FIELDS, ConnectionOptions
from serial_mcp.core.esp_ports import esptool_hint
from serial_mcp.core.framing.config import check_tx_framing
from serial_mcp.core.identity import OpenPlan, can_follow, generated_selector, identity_of, plan_bare_open
from serial_mcp.core.pace import parse_pace
from serial_mcp.core.port_url import check_text
from serial_mcp.core.presets import effective
from serial_mcp.core.reconnect import parse_policy
from serial_mcp.core.settings import SerialSettings
from serial_mcp.engine import mirroring, responding
from serial_mcp.engine.access import Caller
from serial_mcp.engine.log_ops import start_recording
from serial_mcp.engine.option_types import Share, Standing
from serial_mcp.engine.options import SERIAL_FIELDS
from serial_mcp.engine.services import Services
from serial_mcp.errors import AccessError, ErrorCode, InvalidArgument, SerialMcpError
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.mirror import PtyMirror
from serial_mcp.serial.policy import resolve_port
from serial_mcp.serial.ports import PortInfo
from serial_mcp.store.captures import validate_name
from serial_mcp.store.profiles import Profile

SETTING_FIELDS = SERIAL_FIELDS  # the UART settings: live, and in a profile
OPEN_ONLY_FIELDS = ("rs485", "low_latency")


@dataclass
class Opened:
    conn: Connection
    profile: str | None
    action: str  # reuse | generate | profile | transient | none
    hint: str | None = None  # for the open's text: which mirror esptool needs here (core.esp_ports)


def port_info_for(port: str, ports: list[PortInfo]) -> PortInfo:
    """The live port's identity, or a bare one (path only) for PTYs, URLs and unknown names."""
    if "://" not in port:
        real = os.path.realpath(port)
        for p in ports:
            if os.path.realpath(p.name) == real:
                return p
    return PortInfo.virtual(port)


def connection_defaults(conn: Connection) -> dict[str, Any]:
    """What a profile remembers about a live connection."""
    settings = conn.settings.as_dict()
    out: dict[str, Any] = {k: settings[k] for k in SETTING_FIELDS}
    for key in CODEC_FIELDS:
        if getattr(conn.options, key) is not None:
            out[key] = getattr(conn.options, key)
    if conn.rx_buffer_size != 256 * 1024:
        out["rx_buffer_size"] = conn.rx_buffer_size
    if conn.reconnect_policy is not None:
        out["reconnect"] = conn.reconnect_policy.as_dict()
    pace = conn.options.pace
    if pace is not None:
        out["pace"] = pace.as_dict()
    return out


class Opener:
    """Everything an open needs; shared by ``open`` and ``open_profile`` (and profile write-through)."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc
        self.manager = svc.manager
        self.port_lister = svc.port_lister
        self.captures = svc.captures
        self.profiles = svc.profiles
        self.read_only = svc.policy.read_only

    async def plan(self, port: str, profile_mode: str) -> tuple[OpenPlan | None, list[PortInfo]]:
        ports = await anyio.to_thread.run_sync(self.port_lister)
        if self.profiles is None:
            return None, ports
        stored = await anyio.to_thread.run_sync(self.profiles.list)
        return plan_bare_open(port_info_for(port, ports), ports, stored, profile_mode), ports

    async def open(
        self,
        port: str,
        fields: dict[str, Any],
        *,
        profile_mode: str = "auto",
        profile: Profile | None = None,
        record: str | None = None,
        mirror: str | None = None,
        caller: Caller | None = None,
        share: Share | None = None,
        respond: Standing | None = None,
    ) -> Opened:
        """Open ``port`` with the call's ``fields`` (None = not given) over the profile's defaults.

        The connection belongs to ``caller``; ``share="write"`` lets other callers write and close it.
        In read-only mode nothing that writes is accepted (a read-write mirror, RS-485 mode) and the
        profile store is not written (a profile is still applied, but none is generated or touched)."""
        if not isinstance(port, str) or not port.strip():
            raise InvalidArgument(messages.OPEN_NO_PORT)
        check_text(port)  # a NUL or a lone surrogate: invalid_argument before any path lookup
        standing = responding.parse_standing(respond) if respond is not None else []
        if standing:
            self.svc.policy.refuse_argument("open", "respond", messages.READ_ONLY_WHY_RESPOND)
        if mirror == "rw":
            self.svc.policy.refuse_argument("open", "mirror", messages.READ_ONLY_WHY_MIRROR_RW)
        if fields.get("rs485") is not None:
            self.svc.policy.refuse_argument("open", "rs485", messages.READ_ONLY_WHY_RS485)
        port = await anyio.to_thread.run_sync(resolve_port, port, self.port_lister)
        plan: OpenPlan | None = None
        ports: list[PortInfo] | None = None
        if profile is None and self.profiles is not None:
            plan, ports = await self.plan(port, profile_mode)
            if plan is not None and plan.action == "reuse" and plan.profile:
                profile = await anyio.to_thread.run_sync(self.profiles.get, plan.profile)
        merged = dict(profile.defaults) if profile is not None else {}
        merged.update({k: v for k, v in fields.items() if v is not None})
        settings = SerialSettings().updated(**{k: merged.get(k) for k in SETTING_FIELDS + OPEN_ONLY_FIELDS})
        defaults: dict[str, Any] = {k: merged.get(k) for k in CODEC_FIELDS}
        resolved = effective({}, defaults)  # validate now: a bad framing fails the open, not the first read
        reader.build_decode_spec(resolved.rx_framing, resolved.rx_parser)
        check_tx_framing(resolved.tx_framing)  # validated as a framing, nothing encoded
        options = ConnectionOptions(**defaults, pace=parse_pace(merged.get("pace")))
        policy = parse_policy(merged.get("reconnect"))
        mirroring.check_mirror(mirror)
        await mirroring.refuse_own_mirror(self.manager, port, (caller or Caller.local()).key)
        if record is not None:  # checked before the port is touched
            validate_name(record)
            if not self.captures.enabled:
                raise AccessError(ErrorCode.CAPTURE_DISABLED, messages.CAPTURE_DISABLED)
        if ports is None and "://" not in port:
            ports = await anyio.to_thread.run_sync(self.port_lister)
        identity = identity_of(port_info_for(port, ports or []))  # a USB device is followed by identity
        follow = (identity, self.port_lister) if can_follow(identity) else None
        conn = await self.manager.open(
            port, settings, merged.get("rx_buffer_size"), options, reconnect=policy, follow=follow
        )
        conn.hold_for((caller or Caller.local()).key, share or "read")  # typed (OpenOptions): read or write
        try:
            name, action = await self._bind(conn, plan, profile)
            if record is not None:
                start_recording(conn, self.captures, record)
            if mirror in mirroring.RFC2217_KINDS:  # receive-only in read-only mode
                mirroring.start_rfc2217(conn, self.read_only, mirror)
            elif mirror is not None:
                conn.attach_mirror(PtyMirror(conn, mirror))  # type: ignore[arg-type]
            if standing:  # from the very first byte, whenever the agent gets to its first read
                await responding.arm_standing(conn, standing, conn.snapshot().start_offset)
        except BaseException:
            await self.manager.close(conn.id)
            raise
        return Opened(conn, name, action, esptool_hint(port, identity.vid, mirror))

    async def _bind(
        self, conn: Connection, plan: OpenPlan | None, profile: Profile | None
    ) -> tuple[str | None, str]:
        store = self.profiles
        if store is None:
            return None, "none"
        if profile is not None:
            conn.bind_profile(profile.name)
            if not self.read_only:
                await anyio.to_thread.run_sync(store.touch_used, profile.name)
            return profile.name, "reuse" if plan is not None else "profile"
        if plan is not None and plan.action == "generate" and plan.profile and not self.read_only:
            selector = plan.selector or generated_selector(plan.identity)
            try:
                await anyio.to_thread.run_sync(
                    lambda: store.create(
                        plan.profile or "", selector, connection_defaults(conn), generated=True
                    )
                )
            except SerialMcpError as exc:
                if exc.code == ErrorCode.RESOURCE_LIMIT:  # the store is full: the port opens without one
                    return None, "transient"
                if exc.code != ErrorCode.PROFILE_EXISTS:  # another process created it first: use theirs
                    raise
            conn.bind_profile(plan.profile)
            await anyio.to_thread.run_sync(store.touch_used, plan.profile)
            return plan.profile, "generate"
        return None, "transient"

    async def persist(self, conn: Connection, changes: dict[str, Any]) -> str:
        """Write-through learning: a durable change goes into the bound profile."""
        name = conn.options.profile
        if self.profiles is None or not name or self.read_only:
            return "transient"
        store = self.profiles
        try:
            before = await anyio.to_thread.run_sync(store.get, name)
            after = await anyio.to_thread.run_sync(
                lambda: store.update(name, expected_revision=None, defaults=changes)
            )
        except SerialMcpError:
            return "failed"
        if before is not None and after.revision == before.revision:
            return "not_needed"
        return "persisted"
