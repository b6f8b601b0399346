"""Device-profile operations: list, open, save, delete, configure and roll back profiles."""

from __future__ import annotations

import anyio

from serial_mcp import messages
from serial_mcp.core.identity import generated_selector, identity_of, selector_matches
from serial_mcp.engine import event_reports, mirroring, responding, results
from serial_mcp.engine.access import Caller
from serial_mcp.engine.line_actions import apply_settings
from serial_mcp.engine.opening import SETTING_FIELDS, Opener, connection_defaults, port_info_for
from serial_mcp.engine.options import (
    ConfigureOptions,
    DeleteProfileOptions,
    NoOptions,
    ProfileNameOptions,
    RollbackOptions,
    SaveProfileOptions,
)
from serial_mcp.engine.services import Services
from serial_mcp.errors import AccessError, Conflict, ErrorCode, InvalidArgument, NotFound
from serial_mcp.store.profiles import Profile, ProfileStore


def _result(p: Profile, persistence: str | None = None) -> results.ProfileResult:
    return results.ProfileResult(profile=p.as_dict(), revision=p.revision, profile_persistence=persistence)


def _store(svc: Services) -> ProfileStore:
    if svc.profiles is None:
        raise AccessError(ErrorCode.PROFILES_DISABLED, messages.PROFILES_DISABLED)
    return svc.profiles


async def _get(svc: Services, name: str) -> Profile:
    found = await anyio.to_thread.run_sync(_store(svc).get, name)
    if found is None:
        raise NotFound(ErrorCode.PROFILE_NOT_FOUND, messages.PROFILE_NO_SUCH.format(name=name))
    return found


async def list_profiles(
    svc: Services, caller: Caller, target: None, opts: NoOptions
) -> results.ProfilesResult:
    items = await anyio.to_thread.run_sync(_store(svc).list)
    return results.ProfilesResult(profiles=[p.as_dict() for p in items])


async def open_profile(
    svc: Services, caller: Caller, target: None, opts: ProfileNameOptions
) -> results.OpenResult:
    """Open the one live port a profile's selector matches, with the profile's settings."""
    name = opts.name
    profile = await _get(svc, name)
    ports = await anyio.to_thread.run_sync(svc.port_lister)
    live = [p for p in ports if selector_matches(profile.selector, p)]
    glob = profile.selector.get("port_glob")
    if not live and glob and "://" in glob:
        live = [port_info_for(glob, [])]  # a network/replay profile names its URL directly
    if len(live) != 1:
        names = ", ".join(p.name for p in live) or "none"
        raise Conflict(
            ErrorCode.PROFILE_NO_UNIQUE_PORT, messages.PROFILE_NO_UNIQUE.format(name=name, ports=names)
        )
    opened = await Opener(svc).open(live[0].name, {}, profile=profile, caller=caller)
    return results.open_result(opened.conn, opened.profile, opened.action, opened.hint)


async def save_profile(
    svc: Services, caller: Caller, connection_id: str, opts: SaveProfileOptions
) -> results.ProfileResult:
    name, overwrite = opts.name, opts.overwrite
    conn = svc.writing(caller, connection_id, "save_profile")  # it binds the connection to the profile
    store = _store(svc)
    ports = await anyio.to_thread.run_sync(svc.port_lister)
    identity = identity_of(port_info_for(conn.port, ports))
    selector = generated_selector(identity) if identity.confidence != "none" else {"port_glob": conn.port}
    saved = await anyio.to_thread.run_sync(
        lambda: store.save(name, selector, connection_defaults(conn), overwrite)
    )
    conn.bind_profile(saved.name)
    return _result(saved)


async def delete_profile(
    svc: Services, caller: Caller, target: None, opts: DeleteProfileOptions
) -> results.ProfileResult:
    name, expected_revision = opts.name, opts.expected_revision
    svc.policy.require_writable("delete_profile")
    store = _store(svc)
    bound = [c.id for c in svc.manager.list() if c.options.profile == name]
    if bound:
        ids = ", ".join(bound)
        raise Conflict(ErrorCode.PROFILE_IN_USE, messages.PROFILE_IN_USE.format(name=name, ids=ids))
    deleted = await anyio.to_thread.run_sync(lambda: store.delete(name, expected_revision))
    return _result(deleted)


async def configure(
    svc: Services, caller: Caller, target: None, opts: ConfigureOptions
) -> results.ProfileResult:
    """Change a stored profile, or a live connection's settings (written through to its profile)."""
    defaults, profile, connection_id = opts.defaults, opts.profile, opts.connection_id
    expected_revision = opts.expected_revision
    svc.policy.require_writable("configure")
    if (profile is None) == (connection_id is None):
        raise InvalidArgument(messages.CONFIGURE_ONE_OF)
    if profile is not None:
        store = _store(svc)
        updated = await anyio.to_thread.run_sync(
            lambda: store.update(profile, expected_revision=expected_revision, defaults=defaults)
        )
        return _result(updated)
    conn = svc.connection(caller, connection_id or "", "control")
    live = (*SETTING_FIELDS, "respond", "elf", "mirror")
    unknown = sorted(set(defaults) - set(live))
    if unknown:
        raise InvalidArgument(messages.CONFIGURE_LIVE_FIELDS.format(key=unknown[0], allowed=", ".join(live)))
    settings = {k: v for k, v in defaults.items() if k not in ("respond", "elf", "mirror")}
    new = conn.settings.updated(**settings)  # validated before anything changes
    if "respond" in defaults:
        responding.parse_standing(defaults["respond"])
    if "mirror" in defaults:
        mirroring.check_configure(defaults["mirror"])
    elf = defaults.get("elf")
    loaded = await event_reports.load(svc, elf) if elf is not None else None  # a bad ELF changes nothing
    if "elf" in defaults:  # the firmware ELF belongs to the connection, not to its profile (issue 24)
        conn.events.use_elf(loaded)
    if settings:
        await apply_settings(conn, new)
    if "respond" in defaults:  # standing rules belong to the connection, not to its profile
        await responding.replace_standing(svc, caller, conn.id, defaults["respond"])
    if "mirror" in defaults:  # issue 23.1: an RFC 2217 mirror, added or ended live
        await mirroring.configure_mirror(conn, defaults["mirror"], svc.policy.read_only)
    persistence = await Opener(svc).persist(conn, settings) if settings else "not_needed"
    name = conn.options.profile
    current = await anyio.to_thread.run_sync(_store(svc).get, name) if name and svc.profiles else None
    url = conn.rfc2217.url if conn.rfc2217 is not None else None
    if current is None:
        return results.ProfileResult(
            profile=None, revision=None, profile_persistence=persistence, mirror_url=url
        )
    return _result(current, persistence).model_copy(update={"mirror_url": url})


async def rollback_profile(
    svc: Services, caller: Caller, target: None, opts: RollbackOptions
) -> results.ProfileResult:
    name, to_revision, expected_revision = opts.name, opts.to_revision, opts.expected_revision
    svc.policy.require_writable("rollback_profile")
    store = _store(svc)
    restored = await anyio.to_thread.run_sync(lambda: store.rollback(name, to_revision, expected_revision))
    return _result(restored)
