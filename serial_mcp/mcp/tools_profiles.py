"""Device-profile tools: list, open, save, delete, configure and roll back profiles."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from serial_mcp import messages
from serial_mcp.engine import profile_ops, results
from serial_mcp.engine.services import Services
from serial_mcp.mcp import params
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.toolkit import ToolRegistry

ProfileName = Annotated[str, Field(description=messages.P_PROFILE)]
Revision = Annotated[params.Int | None, Field(description=messages.P_EXPECTED_REVISION)]


def register(reg: ToolRegistry, svc: Services) -> None:
    @reg.tool(
        title="List device profiles", description=messages.D_LIST_PROFILES, read_only=True, idempotent=True
    )
    async def list_profiles() -> results.ProfilesResult:
        return await profile_ops.list_profiles(svc)

    @reg.tool(title="Open the device of a profile", description=messages.D_OPEN_PROFILE)
    async def open_profile(name: ProfileName) -> results.OpenResult:
        return await profile_ops.open_profile(svc, current(), name)

    @reg.tool(title="Save a connection as a profile", description=messages.D_SAVE_PROFILE, mutates=True)
    async def save_profile(
        connection_id: params.ConnId,
        name: ProfileName,
        overwrite: Annotated[bool, Field(description=messages.P_OVERWRITE)] = False,
    ) -> results.ProfileResult:
        return await profile_ops.save_profile(svc, current(), connection_id, name, overwrite)

    @reg.tool(
        title="Delete a profile", description=messages.D_DELETE_PROFILE, destructive=True, mutates=True
    )
    async def delete_profile(name: ProfileName, expected_revision: Revision = None) -> results.ProfileResult:
        return await profile_ops.delete_profile(svc, name, expected_revision)

    @reg.tool(title="Change a profile or a connection", description=messages.D_CONFIGURE, mutates=True)
    async def configure(
        defaults: Annotated[dict[str, Any], Field(description=messages.P_DEFAULTS)],
        profile: Annotated[str | None, Field(description=messages.P_PROFILE)] = None,
        connection_id: Annotated[str | None, Field(description=messages.P_CONNECTION_ID)] = None,
        expected_revision: Revision = None,
    ) -> results.ProfileResult:
        return await profile_ops.configure(
            svc,
            current(),
            defaults,
            profile=profile,
            connection_id=connection_id,
            expected_revision=expected_revision,
        )

    @reg.tool(title="Restore an earlier profile revision", description=messages.D_ROLLBACK, mutates=True)
    async def rollback_profile(
        name: ProfileName,
        to_revision: Annotated[params.Int, Field(description=messages.P_TO_REVISION)],
        expected_revision: Revision = None,
    ) -> results.ProfileResult:
        return await profile_ops.rollback_profile(svc, name, to_revision, expected_revision)
