"""Respond-on-match: rules armed for one call (``read/transact/capture_boot(respond=...)``) or
standing on the connection (``open(respond=[...])``, ``configure(connection_id, {"respond": [...]})``).

A rule sees what already arrived, not only what comes next: an agent that calls ``read(respond=
{"on": "Hit any key", ...})`` two seconds after the bootloader printed it still stops the countdown.
A call's rule is primed with the unread bytes from the read's start; a standing rule armed at open
from the very first byte, one armed later from the caller's unread position. Every answer is logged
(a ``tx`` event with ``respond: true``) and counted in ``get_status``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from serial_mcp import messages
from serial_mcp.core.match import Matcher
from serial_mcp.engine.access import Caller
from serial_mcp.engine.option_types import TERMINAL, RuleSpec, standing_rules
from serial_mcp.engine.services import Services
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.responder import Responder, answer, disarm, prime

CURSOR_REPORT = b"\x1b[24;80R"
UNLIMITED = 1 << 30


def check(svc: Services, tool: str, spec: RuleSpec | None) -> None:
    """Validate a call's rule (and refuse it in read-only mode) before anything is touched."""
    if spec is not None:
        svc.policy.refuse_argument(tool, "respond", messages.READ_ONLY_WHY_RESPOND)
        Responder.from_spec(spec)


@asynccontextmanager
async def armed(
    svc: Services, tool: str, conn: Connection, spec: RuleSpec | None, start: int | None
) -> AsyncIterator[Responder | None]:
    """Arm ``spec`` for the duration of one call; ``start`` is where the call's reading begins."""
    if spec is None:
        yield None
        return
    svc.policy.refuse_argument(tool, "respond", messages.READ_ONLY_WHY_RESPOND)
    responder = Responder.from_spec(spec)
    hits = prime(conn, responder, start)
    try:
        await _answer(conn, responder, hits)  # what already arrived asked for an answer: give it now
        yield responder
    finally:
        disarm(conn, responder)


def parse_standing(spec: object) -> list[Responder]:
    """Standing rules (``option_types.standing_rules``: a list of ``{on, send, encoding, times}``
    or ``"terminal"``; one rule alone is accepted too) as armed responders."""
    out = []
    for rule in standing_rules(spec):
        if rule == TERMINAL:  # answer terminal queries: shells that ask for the cursor get a reply
            r = Responder(Matcher(b"\x1b[6n"), CURSOR_REPORT, times=UNLIMITED, standing=True, on="ESC[6n")
        else:
            r = Responder.from_spec(rule)
            r.standing = True
        out.append(r)
    return out


async def arm_standing(conn: Connection, rules: list[Responder], start: int | None) -> None:
    """Arm standing rules from ``start`` and answer what the history already asks for."""
    for r in rules:
        await _answer(conn, r, prime(conn, r, start))


async def _answer(conn: Connection, responder: Responder, hits: int) -> None:
    """Send ``hits`` answers through the connection's writer and wait until each went out or was
    dropped (the writer bounds every one; the loop only awaits)."""
    for _ in range(hits):
        await asyncio.wrap_future(answer(conn, responder))


async def replace_standing(
    svc: Services, caller: Caller, connection_id: str, spec: object
) -> list[dict[str, Any]]:
    """Replace the connection's standing rules with ``spec`` (``[]`` removes them all)."""
    svc.policy.refuse_argument("configure", "respond", messages.READ_ONLY_WHY_RESPOND)
    conn = svc.connection(caller, connection_id, "write")
    rules = parse_standing(spec)
    for r in conn.armed_responders():
        if getattr(r, "standing", False):
            disarm(conn, r)
    start = conn.rx.cursor_offset(caller.cursor(None))
    await arm_standing(conn, rules, start)
    return [r.status() for r in rules]


def statuses(conn: Connection) -> list[dict[str, Any]]:
    return [r.status() for r in conn.armed_responders() if isinstance(r, Responder)]
