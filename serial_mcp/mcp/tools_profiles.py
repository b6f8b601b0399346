"""Device-profile tools: list, open, save, delete, configure and roll back profiles."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from pydantic import Field

from serial_mcp import messages
from serial_mcp.core.identity import generated_selector, identity_of, selector_matches
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.mcp import models, params
from serial_mcp.mcp.opening import SETTING_FIELDS, Opener, connection_defaults, port_info_for
from serial_mcp.mcp.toolkit import ToolRegistry
from serial_mcp.mcp.tools_line import apply_settings
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.profiles import Profile, ProfileStore

ProfileName = Annotated[str, Field(description=messages.P_PROFILE)]
Revision = Annotated[int | None, Field(description=messages.P_EXPECTED_REVISION)]


def _result(p: Profile, persistence: str | None = None) -> models.ProfileResult:
    return models.ProfileResult(profile=p.as_dict(), revision=p.revision, profile_persistence=persistence)


def register(reg: ToolRegistry, manager: ConnectionManager, opener: Opener) -> None:
    def store() -> ProfileStore:
        if opener.profiles is None:
            raise SerialMcpError("profiles_disabled", messages.PROFILES_DISABLED)
        return opener.profiles

    async def get(name: str) -> Profile:
        found = await anyio.to_thread.run_sync(store().get, name)
        if found is None:
            raise SerialMcpError("profile_not_found", messages.PROFILE_NO_SUCH.format(name=name))
        return found

    @reg.tool(
        title="List device profiles", description=messages.D_LIST_PROFILES, read_only=True, idempotent=True
    )
    async def list_profiles() -> models.ProfilesResult:
        items = await anyio.to_thread.run_sync(store().list)
        return models.ProfilesResult(profiles=[p.as_dict() for p in items])

    @reg.tool(title="Open the device of a profile", description=messages.D_OPEN_PROFILE)
    async def open_profile(name: ProfileName) -> models.OpenResult:
        profile = await get(name)
        ports = await anyio.to_thread.run_sync(opener.port_lister)
        live = [p for p in ports if selector_matches(profile.selector, p)]
        glob = profile.selector.get("port_glob")
        if not live and glob and "://" in glob:
            live = [port_info_for(glob, [])]  # a network/replay profile names its URL directly
        if len(live) != 1:
            names = ", ".join(p.name for p in live) or "none"
            raise SerialMcpError(
                "profile_no_unique_port", messages.PROFILE_NO_UNIQUE.format(name=name, ports=names)
            )
        opened = await opener.open(live[0].name, {}, profile=profile)
        return models.open_result(opened.conn, opened.profile, opened.action)

    @reg.tool(title="Save a connection as a profile", description=messages.D_SAVE_PROFILE, mutates=True)
    async def save_profile(
        connection_id: params.ConnId,
        name: ProfileName,
        overwrite: Annotated[bool, Field(description=messages.P_OVERWRITE)] = False,
    ) -> models.ProfileResult:
        conn = manager.get(connection_id)
        ports = await anyio.to_thread.run_sync(opener.port_lister)
        identity = identity_of(port_info_for(conn.port, ports))
        selector = generated_selector(identity) if identity.confidence != "none" else {"port_glob": conn.port}
        saved = await anyio.to_thread.run_sync(
            lambda: store().save(name, selector, connection_defaults(conn), overwrite)
        )
        conn.options["profile"] = saved.name
        return _result(saved)

    @reg.tool(title="Delete a profile", description=messages.D_DELETE_PROFILE, mutates=True)
    async def delete_profile(name: ProfileName, expected_revision: Revision = None) -> models.ProfileResult:
        bound = [c.id for c in manager.list() if c.options.get("profile") == name]
        if bound:
            raise SerialMcpError(
                "profile_in_use", messages.PROFILE_IN_USE.format(name=name, ids=", ".join(bound))
            )
        deleted = await anyio.to_thread.run_sync(lambda: store().delete(name, expected_revision))
        return _result(deleted)

    @reg.tool(title="Change a profile or a connection", description=messages.D_CONFIGURE, mutates=True)
    async def configure(
        defaults: Annotated[dict[str, Any], Field(description=messages.P_DEFAULTS)],
        profile: Annotated[str | None, Field(description=messages.P_PROFILE)] = None,
        connection_id: Annotated[str | None, Field(description=messages.P_CONNECTION_ID)] = None,
        expected_revision: Revision = None,
    ) -> models.ProfileResult:
        if (profile is None) == (connection_id is None):
            raise InvalidArgument(messages.CONFIGURE_ONE_OF)
        if profile is not None:
            updated = await anyio.to_thread.run_sync(
                lambda: store().update(profile, expected_revision=expected_revision, defaults=defaults)
            )
            return _result(updated)
        conn = manager.get(connection_id or "")
        unknown = sorted(set(defaults) - set(SETTING_FIELDS))
        if unknown:
            raise InvalidArgument(
                messages.CONFIGURE_LIVE_FIELDS.format(key=unknown[0], allowed=", ".join(SETTING_FIELDS))
            )
        await apply_settings(conn, conn.settings.updated(**defaults))
        persistence = await opener.persist(conn, dict(defaults))
        name = conn.options.get("profile")
        current = await anyio.to_thread.run_sync(store().get, name) if name and opener.profiles else None
        if current is None:
            return models.ProfileResult(profile=None, revision=None, profile_persistence=persistence)
        return _result(current, persistence)

    @reg.tool(title="Restore an earlier profile revision", description=messages.D_ROLLBACK, mutates=True)
    async def rollback_profile(
        name: ProfileName,
        to_revision: Annotated[int, Field(description=messages.P_TO_REVISION)],
        expected_revision: Revision = None,
    ) -> models.ProfileResult:
        restored = await anyio.to_thread.run_sync(
            lambda: store().rollback(name, to_revision, expected_revision)
        )
        return _result(restored)
