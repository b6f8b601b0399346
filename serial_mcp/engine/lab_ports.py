"""The lab's places beside the local ports (issue 25): ``list_ports`` and completions.

With a labgrid coordinator configured, each place is a port ``labgrid://PLACE`` of ``kind``
"labgrid", with its tags, comment, holder and serial resource's host; a coordinator that cannot
be reached is said in the result (``lab_error``), never a silent empty list. Without a coordinator
nothing is asked and labgrid is not imported.
"""

from __future__ import annotations

import datetime

import anyio

from serial_mcp.engine import results
from serial_mcp.engine.services import Services
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.labgrid_port import LabgridOpener, lab_opener_of


def _opener(svc: Services) -> LabgridOpener | None:
    lab = lab_opener_of(svc.manager.opener)
    return lab if lab is not None and lab.coordinator() is not None else None


async def listed(svc: Services, open_by_port: dict[str, str]) -> tuple[list[results.Port], str | None]:
    """``(the places as ports, why they could not be listed or None)``."""
    lab = _opener(svc)
    if lab is None:
        return [], None
    try:
        places = await anyio.to_thread.run_sync(lab.places)
    except SerialMcpError as exc:
        return [], exc.message
    ports = []
    for place in places:
        name = f"labgrid://{place.name}"
        since = (
            datetime.datetime.fromtimestamp(place.changed, datetime.UTC).isoformat(timespec="seconds")
            if place.acquired
            else None
        )
        ports.append(
            results.Port(
                name=name,
                description=place.comment or "labgrid place",
                transport="labgrid",
                kind="labgrid",
                open_as=open_by_port.get(name),
                lab=results.LabPlace(
                    tags=place.tags,
                    comment=place.comment,
                    acquired_by=place.acquired,
                    acquired_since=since,
                    host=lab.resource_host(place),
                ),
            )
        )
    return ports, None


def place_urls(svc: Services) -> list[str]:
    """``labgrid://PLACE`` of every place (completions); [] when there is no coordinator or it is down."""
    lab = _opener(svc)
    if lab is None:
        return []
    try:
        return [f"labgrid://{p.name}" for p in lab.places()]
    except SerialMcpError:
        return []
