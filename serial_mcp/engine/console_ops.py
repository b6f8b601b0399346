"""Console and bench operations: detect_baud (scan rates, rank the text heard) and XMODEM/YMODEM."""

from __future__ import annotations

import base64
import importlib
from typing import Literal

import anyio

from serial_mcp import messages
from serial_mcp.core.baud import COMMON_RATES, rank
from serial_mcp.core.encoding import decode_input
from serial_mcp.engine import results, writing
from serial_mcp.engine.access import Caller
from serial_mcp.engine.line_actions import apply_settings
from serial_mcp.engine.options import DetectBaudOptions, TransferOptions
from serial_mcp.engine.services import Services, report_progress
from serial_mcp.errors import InvalidArgument

MAX_CANDIDATES = 16
MAX_TRANSFER = 16 * 1024 * 1024
TRANSFER_MACHINERY = "serial_mcp.serial.transfer"  # and core.xmodem: loaded by the first transfer


async def detect_baud(
    svc: Services, caller: Caller, connection_id: str, opts: DetectBaudOptions
) -> results.BaudResult:
    """Listen at each candidate rate for ``window_ms`` (optionally after a probe), rank what was
    heard, and always restore the original settings."""
    conn = svc.writing(caller, connection_id, "detect_baud")
    candidates, window_ms, probe = opts.candidates, opts.window_ms, opts.probe
    rates = list(candidates or COMMON_RATES)
    if not 1 <= len(rates) <= MAX_CANDIDATES or isinstance(window_ms, bool) or not 50 <= window_ms <= 10_000:
        raise InvalidArgument(messages.BAUD_ARGS.format(max=MAX_CANDIDATES))
    original = conn.settings
    for rate in rates:
        original.updated(baud_rate=rate)  # every candidate is validated before the port is touched
    probe_bytes = decode_input(probe, "utf8", field="probe") if probe else None
    writing.require_open(conn)
    heard: dict[int, bytes] = {}
    try:
        for rate in rates:
            await apply_settings(conn, original.updated(baud_rate=rate))
            mark = await conn.purge_and_mark()
            if probe_bytes:
                await writing.write(conn, probe_bytes)
            await anyio.sleep(window_ms / 1000)  # listen for a fixed window at this rate
            data = conn.read_ring(mark, 65536).data
            heard[rate] = data  # a probe only provokes output: garbage answers too, so text decides
    finally:
        with anyio.CancelScope(shield=True):
            await apply_settings(conn, original)  # always restore the original settings
    verdict = rank(heard)
    return results.BaudResult(
        connection_id=conn.id,
        best=verdict.best,
        conclusive=verdict.conclusive,
        reason=verdict.reason,
        ranked=[{"baud_rate": b, "score": round(s, 3), "bytes": len(heard[b])} for b, s in verdict.ranked],
        restored_baud_rate=original.baud_rate,
    )


async def file_transfer(
    svc: Services, caller: Caller, connection_id: str, opts: TransferOptions
) -> results.TransferResultModel:
    """Send or receive a file with XMODEM (checksum, CRC, 1K) or YMODEM batch."""
    conn = svc.writing(caller, connection_id, "file_transfer", "write")
    direction, protocol, data, encoding = opts.direction, opts.protocol, opts.data, opts.encoding
    filename = opts.filename
    mode: Literal["checksum", "crc", "1k"] = {"xmodem": "checksum", "xmodem_crc": "crc"}.get(  # type: ignore[assignment]
        protocol, "1k"
    )
    # The XMODEM/YMODEM machines are for the rare call that moves a file: not imported with the
    # engine (issue 27: idle memory), but by this call, on a worker thread (the loop stays live).
    await anyio.to_thread.run_sync(importlib.import_module, TRANSFER_MACHINERY)
    from serial_mcp.core.xmodem import Progress as TransferProgress
    from serial_mcp.core.xmodem import XmodemReceiver, XmodemSender, YmodemFile, YmodemReceiver, YmodemSender
    from serial_mcp.serial.transfer import Machine, run_transfer

    machine: Machine
    if direction == "send":
        if data is None:
            raise InvalidArgument(messages.TRANSFER_NEEDS_DATA)
        payload = decode_input(data, encoding or "base64")
        if len(payload) > MAX_TRANSFER:
            raise InvalidArgument(messages.TRANSFER_TOO_BIG.format(max=MAX_TRANSFER))
        if protocol == "ymodem":
            machine = YmodemSender([YmodemFile(filename or "file.bin", payload)])
        else:
            machine = XmodemSender(payload, mode)
    else:
        machine = (
            YmodemReceiver(max_bytes=MAX_TRANSFER)
            if protocol == "ymodem"
            else XmodemReceiver(mode, max_bytes=MAX_TRANSFER)
        )
    writing.require_open(conn)

    async def on_progress(p: TransferProgress) -> None:
        await report_progress(
            p.bytes, p.total_bytes or None, messages.TRANSFER_PROGRESS.format(block=p.block)
        )

    result = await run_transfer(conn, machine, on_progress)
    conn.record("marker", label=f"{protocol} {direction}", ok=result.ok, bytes=result.bytes)
    received = b"".join(f.data for f in result.files if f.data is not None) if direction == "receive" else b""
    return results.TransferResultModel(
        **{k: getattr(result, k) for k in ("ok", "bytes", "blocks", "retries", "cancelled", "error")},
        files=[{"name": f.name, "size": f.size} for f in result.files],
        data=base64.b64encode(received).decode() if received else None,
    )
