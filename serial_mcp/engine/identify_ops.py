"""``identify``: what is on each port, and how to talk to it — listening first, poking only if asked.

For each port, in parallel: take the caller's open connection to it or open a held one through
``held.port_connection`` (the same allowlist, read-only and ownership checks as ``open``); listen for
``listen_ms`` with no byte written and no line toggled; on a real UART whose bytes do not read as
anything, try the common rates on the open descriptor (never a close and reopen per rate), score what
is heard (``core.baud.rank``) and put the settings back. What was heard is judged by the fingerprint
table (``core.port_kinds``). With ``probe``, the table's safe pokes are sent one by one, only while the
question is open and never while a boot or a U-Boot countdown runs; every byte sent is listed.

A port that cannot be opened (busy, missing, refused) is that port's answer, not a failed call. What
identify reads it reads without a cursor: the agent's next ``read`` still gets every byte.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio

from serial_mcp import messages
from serial_mcp.core.baud import COMMON_RATES, MIN_SCORE, rank, score_text
from serial_mcp.core.outside_text import quoted
from serial_mcp.core.port_info import PortInfo
from serial_mcp.core.port_kinds import Poke, Verdict, escaped, judge_heard, judge_reply, pokes_for
from serial_mcp.engine import held, writing
from serial_mcp.engine.access import Caller
from serial_mcp.engine.line_actions import apply_settings
from serial_mcp.engine.options import IdentifyOptions
from serial_mcp.engine.results_identify import IdentifyResult, PortAnswer, usb_identity
from serial_mcp.engine.services import Services
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.holders import holders_of, program_of

MAX_PORTS = 16
HISTORY_BYTES = 4096  # of an already open connection's past, judged with what is heard now
SWEEP_WINDOW_S = 0.25  # listening per candidate rate
SWEEP_ENOUGH = 256  # bytes at one rate that say enough
QUIET_S = 0.3  # a line quiet this long has finished a burst (a prompt, a boot)
REPLY_GAP_S = 0.08  # after a reply's first byte, the quiet that ends it
REPLY_MAX = 64 * 1024  # bytes of a reply judged (a prompt or a frame is in its first few)
SWEEP_SAMPLE = 4096  # bytes judged per candidate rate
JUDGE_GAP_S = 0.1  # while bytes come, what was heard is judged at most this often
GARBLED_KINDS = frozenset({"unknown", "binary_stream", "text_stream"})  # what a wrong rate can look like
# USB bridges whose DTR/RTS drive a board's reset (auto-reset circuits): opening resets the board
RESETS_ON_OPEN = frozenset({"10c4:ea60", "1a86:7523", "1a86:55d4", "0403:6001", "0403:6015", "303a:1001"})
RESETTING_VENDORS = frozenset({"2341", "2a03", "239a"})  # Arduino, Arduino.org, Adafruit


async def identify(svc: Services, caller: Caller, target: None, opts: IdentifyOptions) -> IdentifyResult:
    if opts.probe:  # before any port is touched: read-only mode refuses the argument, as read's respond
        svc.policy.refuse_argument("identify", "probe", messages.READ_ONLY_WHY_PROBE)
    infos = await anyio.to_thread.run_sync(svc.port_lister)
    ports = list(opts.ports) if opts.ports else [p.name for p in infos if p.transport == "usb"]
    if len(ports) > MAX_PORTS:
        raise InvalidArgument(messages.IDENTIFY_TOO_MANY.format(n=len(ports), max=MAX_PORTS))
    by_name = {p.name: p for p in infos}
    by_path = {os.path.realpath(p.name): p for p in infos if p.name.startswith("/")}
    answers: list[PortAnswer | None] = [None] * len(ports)

    async def one(i: int, port: str) -> None:
        info = by_name.get(port) or (by_path.get(os.path.realpath(port)) if port.startswith("/") else None)
        answers[i] = await _identify_port(svc, caller, port, info, opts)

    async with anyio.create_task_group() as tg:
        for i, port in enumerate(dict.fromkeys(ports)):
            tg.start_soon(one, i, port)
    return IdentifyResult(ports=[a for a in answers if a is not None], probe=opts.probe, none_found=not ports)


@dataclass
class _Port:
    """One port's identification under way: what was heard, what was sent."""

    conn: Connection
    start: int
    sent: list[str] = field(default_factory=list)
    last_seen: tuple[int, float] = (0, 0.0)

    def heard(self) -> bytes:
        return self.conn.rx.read(self.start, None).data

    def quiet_s(self) -> float:
        end = self.conn.rx.end()
        if end != self.last_seen[0]:
            self.last_seen = (end, time.monotonic())
        return time.monotonic() - self.last_seen[1]


async def _identify_port(
    svc: Services, caller: Caller, port: str, info: PortInfo | None, opts: IdentifyOptions
) -> PortAnswer:
    usb = usb_identity(info)
    resets = _resets_on_open(info)
    others = await anyio.to_thread.run_sync(_competing, port)
    try:
        conn, opened = await held.port_connection(svc, caller, port, {})
    except SerialMcpError as exc:
        return PortAnswer(port=port, error=exc.code.value, evidence=exc.message, usb=usb, competing=others)
    except OSError as exc:  # an OS failure the opener did not name: still this port's answer
        return PortAnswer(port=port, error="io_error", evidence=str(exc), usb=usb, competing=others)
    kept_lines = resets and opened and await anyio.to_thread.run_sync(conn.lines.keep_on_close)
    end = conn.rx.end()
    p = _Port(conn, start=0 if opened else max(end - HISTORY_BYTES, 0), last_seen=(end, time.monotonic()))
    uart = info is not None and info.transport != "virtual"  # a PTY or a URL: the rate means nothing
    verdict, baud = await _listen(p, opts.listen_ms / 1000, uart=uart)
    note = verdict.hold_off
    if opts.probe and not verdict.settled:
        verdict, note, rate = await _probe(svc, caller, p, verdict, uart=uart)
        baud = rate or baud
    if (
        opened and uart
    ):  # the connection identify holds talks as the answer says: the next call by port fits it
        wanted = _settings({"baud_rate": baud, **verdict.open})
        if any(getattr(conn.settings, k) != v for k, v in wanted.items()):
            with contextlib.suppress(SerialMcpError):  # a driver that refuses keeps the settings it had
                await apply_settings(conn, conn.settings.updated(**wanted))
    held.touch(svc, conn)
    return PortAnswer(
        port=port,
        kind=verdict.kind,
        confidence=verdict.confidence,
        evidence=verdict.evidence,
        baud_rate=baud if uart else None,
        open=_open_args(port, baud if uart else None, verdict),
        prompt=verdict.prompt,
        sent=p.sent,
        connection_id=conn.id,
        held=held.held_note(svc, conn),
        usb=usb,
        resets_on_open=resets,
        lines_kept=bool(kept_lines) or None,
        competing=others,
        note=note,
    )


async def _listen(p: _Port, window_s: float, *, uart: bool) -> tuple[Verdict, int]:
    """Listen for ``window_s`` (ending early once the verdict is settled and the line quiet); on a
    real UART whose bytes read as nothing, sweep the common rates on the open descriptor."""
    conn = p.conn
    deadline = time.monotonic() + window_s
    verdict = await _judged(p)
    while (left := deadline - time.monotonic()) > 0:
        if verdict.settled and not verdict.hold_off and p.quiet_s() >= QUIET_S:
            break
        await conn.wait_change(min(left, QUIET_S), conn.rx.end())
        await anyio.sleep(min(JUDGE_GAP_S, max(0.0, deadline - time.monotonic())))  # a burst lands first
        verdict = await _judged(p)
    baud = conn.settings.baud_rate
    if uart and verdict.kind in GARBLED_KINDS and await anyio.to_thread.run_sync(_garbled, p.heard()):
        swept = await _sweep(p)
        if swept is not None:
            verdict, baud = swept
    return verdict, baud


async def _judged(p: _Port) -> Verdict:
    """What was heard so far, judged on a worker thread: a flood's frames and patterns (the judge reads up
    to 64 KiB) never hold the event loop, and a burst is judged once per ``JUDGE_GAP_S``, not per chunk."""
    heard, quiet_ms = p.heard(), p.quiet_s() * 1000
    return await anyio.to_thread.run_sync(judge_heard, heard, quiet_ms)


def _garbled(heard: bytes) -> bool:
    return bool(heard) and score_text(heard) < MIN_SCORE


async def _sweep(p: _Port) -> tuple[Verdict, int] | None:
    """The rate at which the line reads clearly as text, and what it says there (None when no rate
    is conclusive); the settings are always put back."""
    conn = p.conn
    original = conn.settings
    heard: dict[int, bytes] = {original.baud_rate: p.heard()}
    try:
        for rate in COMMON_RATES:
            if rate == original.baud_rate:
                continue
            await apply_settings(conn, original.updated(baud_rate=rate))
            mark = conn.rx.end()
            with anyio.move_on_after(SWEEP_WINDOW_S):
                while conn.rx.end() - mark < SWEEP_ENOUGH:
                    await conn.wait_change(SWEEP_WINDOW_S, conn.rx.end())
            heard[rate] = conn.rx.read(mark, SWEEP_SAMPLE).data
    finally:
        with anyio.CancelScope(shield=True):
            await apply_settings(conn, original)
    best = (await anyio.to_thread.run_sync(rank, heard)).best
    if best is None or best == original.baud_rate:
        return None
    return await anyio.to_thread.run_sync(judge_heard, heard[best], QUIET_S * 1000), best


async def _probe(
    svc: Services, caller: Caller, p: _Port, verdict: Verdict, *, uart: bool
) -> tuple[Verdict, str | None, int | None]:
    """Send the table's safe pokes while the question stays open, one at a time, asking the table again
    after each reply (what is worth sending depends on what answered). Returns the verdict, why pokes
    stopped short, and the rate of the poke that answered when it set one (a Modbus read)."""
    if verdict.hold_off:
        return verdict, verdict.hold_off, None
    try:
        conn = svc.writing(caller, p.conn.id, "identify")
    except SerialMcpError as exc:
        return verdict, messages.IDENTIFY_NOT_PROBED.format(why=exc.message), None
    original = conn.settings
    sent: set[tuple[bytes, tuple[tuple[str, object], ...]]] = set()
    answered: int | None = None
    try:
        while True:
            left = [k for k in pokes_for(verdict, p.heard()) if _key(k, uart) not in sent]
            if not left:
                break
            poke = left[0]
            sent.add(_key(poke, uart))
            if uart and poke.settings:
                await apply_settings(conn, original.updated(**_settings(poke.settings)))
            before = verdict
            reply = await _poke(p, poke, uart)
            verdict = await anyio.to_thread.run_sync(judge_reply, poke, reply, verdict)
            if verdict is not before and isinstance(rate := poke.settings.get("baud_rate"), int) and uart:
                answered = rate
            if verdict.settled or verdict.hold_off:
                break
    finally:
        if conn.settings != original:
            with anyio.CancelScope(shield=True):
                await apply_settings(conn, original)
    return verdict, verdict.hold_off, answered


def _key(poke: Poke, uart: bool) -> tuple[bytes, tuple[tuple[str, object], ...]]:
    """What makes two pokes the same: their bytes, and on a UART their settings (off a UART the rate
    and parity mean nothing, so a request is sent once)."""
    return poke.data, tuple(sorted(poke.settings.items())) if uart else ()


async def _poke(p: _Port, poke: Poke, uart: bool) -> bytes:
    """Write one poke and what came back within its wait (ended early by a quiet gap after a reply)."""
    conn = p.conn
    mark = conn.rx.end()
    await writing.write(conn, poke.data)
    p.sent.append(escaped(poke.data) + (_at(poke) if uart else ""))  # the rate it went at, on a UART
    deadline = time.monotonic() + poke.wait_ms / 1000
    while (left := deadline - time.monotonic()) > 0:
        end = conn.rx.end()
        await conn.wait_change(min(left, REPLY_GAP_S) if end > mark else left, end)
        if end > mark and conn.rx.end() == end:  # a reply, then a quiet gap: it is over
            break
    return conn.rx.read(mark, REPLY_MAX).data


def _at(poke: Poke) -> str:
    s = poke.settings
    return f" @{s.get('baud_rate', '')}{str(s.get('parity', ''))[:1].upper()}" if s else ""


def _settings(given: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in given.items() if k in ("baud_rate", "parity", "stop_bits", "data_bits")}


def _open_args(port: str, baud: int | None, verdict: Verdict) -> dict[str, object] | None:
    if verdict.kind in ("silent", "unknown"):
        return None
    return {"port": port, **({"baud_rate": baud} if baud else {}), **verdict.open}


def _resets_on_open(info: PortInfo | None) -> bool:
    if info is None or not info.vid:
        return False
    vid, pid = info.vid.lower(), (info.pid or "").lower()
    return f"{vid}:{pid}" in RESETS_ON_OPEN or vid in RESETTING_VENDORS


def _competing(port: str) -> list[str] | None:
    """Other programs holding the port open (ModemManager, a terminal …), by name and pid."""
    if "://" in port:
        return None
    names = [  # a name any process chooses: quoted as outside text (core/outside_text)
        messages.S_IDENTIFY_HOLDER.format(program=quoted(program_of(pid) or "?"), pid=pid)
        for pid in sorted(holders_of(port))
    ]
    return names or None
