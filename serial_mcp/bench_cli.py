"""The bench engineer's commands, without MCP: ``record``, ``replay`` and ``decode``.

They use the same engine, recorder, replay opener and decoders as the server, so what a person
records here replays through the tools, and what an agent exported decodes here. Status goes to
stderr; stdout carries the data (replayed bytes, decoded frames) or the PTY path.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
import tty
from pathlib import Path
from typing import Any, TextIO

import anyio
from anyio.abc import TaskStatus

from serial_mcp import messages
from serial_mcp.core.capture import decode_lines, parse_capture
from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.encoding import encode_output
from serial_mcp.core.framing.base import FramingError
from serial_mcp.core.presets import effective
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import InvalidArgument
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.mirror import PtyMirror
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.recorder import Recorder
from serial_mcp.serial.replay import ReplayOpener
from serial_mcp.store.captures import create_new_file

HOST_SETTLE_S = 0.2


def _announce(out: TextIO, path: str) -> None:
    """The command's one line of output: the PTY path to open (picocom, pyserial, your software)."""
    out.write(path + "\n")
    out.flush()


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


# --- record -------------------------------------------------------------------------------------------


def run_record(port: str, output: str, baud: int, note: str | None) -> int:
    """Record ``port`` into ``output`` until Ctrl-C (or the device goes away)."""
    return anyio.run(_record, port, output, baud, note)


async def _record(port: str, output: str, baud: int, note: str | None) -> int:
    path = Path(output)
    file = create_new_file(path)
    manager = ConnectionManager(default_opener())
    try:
        conn = await manager.open(port, SerialSettings(baud_rate=baud))
    except BaseException:
        file.close()
        path.unlink(missing_ok=True)
        raise
    rec = Recorder(conn, file, path, 1 << 62, note)
    conn.start_recording(rec)
    reason = "stopped"
    async with anyio.create_task_group() as tg:

        async def on_signal(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()  # Ctrl-C is ours from here on
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        async def on_unplug() -> None:
            nonlocal reason
            while conn.state == "open":
                await conn.wait_change(3600)
            reason = conn.last_error or conn.state
            tg.cancel_scope.cancel()

        await tg.start(on_signal)
        _err(messages.CLI_RECORDING.format(port=port, path=path))
        tg.start_soon(on_unplug)
    await manager.close_all()
    _err(messages.CLI_RECORDED.format(path=path, n=rec.events_written, b=rec.bytes_written, reason=reason))
    return 0


# --- mirror -------------------------------------------------------------------------------------------


def run_mirror(port: str, baud: int, rw: bool, out: TextIO) -> int:
    """Show ``port`` on a PTY (and with ``--rw`` let a person type to it) until Ctrl-C."""
    return anyio.run(_mirror, port, baud, rw, out)


async def _mirror(port: str, baud: int, rw: bool, out: TextIO) -> int:
    manager = ConnectionManager(default_opener())
    conn = await manager.open(port, SerialSettings(baud_rate=baud))
    mirror = PtyMirror(conn, "rw" if rw else "ro")
    conn.closers.append(mirror.close)
    async with anyio.create_task_group() as tg:

        async def on_signal(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()  # Ctrl-C is ours from here on
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        async def on_unplug() -> None:
            while conn.state == "open":
                await conn.wait_change(3600)
            tg.cancel_scope.cancel()

        await tg.start(on_signal)
        _announce(out, mirror.path)
        _err(messages.CLI_MIRRORING.format(port=port, path=mirror.path, mode="rw" if rw else "ro"))
        tg.start_soon(on_unplug)
    await manager.close_all()
    return 0


# --- replay -------------------------------------------------------------------------------------------


def run_replay(file: str, mode: str, speed: float, loop: bool, pty: bool, out: TextIO) -> int:
    """Play a capture to stdout, or into a PTY that any program can open (``--pty``)."""
    url = f"replay://{file}?mode={mode}&speed={speed}&loop={'true' if loop else 'false'}"
    handle = ReplayOpener().open(url, SerialSettings())
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        handle.interrupt()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    if not pty:
        raw = out.buffer  # the replayed bytes themselves, exact
        while not stop.is_set():
            data = handle.read_chunk()
            if data:
                raw.write(data)
                raw.flush()
            elif handle.finished.is_set() and not loop and not handle.due_bytes():
                break
        return 0
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    path = os.ttyname(slave)
    os.close(slave)  # only the host holds the slave: its open is what starts the replay
    _announce(out, path)
    _err(messages.CLI_REPLAY_PTY_READY.format(path=path, mode=mode))
    if not _wait_for_host(master, stop):
        os.close(master)
        return 0
    wake_r, wake_w = os.pipe()

    def host_to_replay() -> None:  # what the program on the PTY writes goes to the replay (respond mode)
        while not stop.is_set():
            ready, _, _ = select.select([master, wake_r], [], [])
            if wake_r in ready:
                return
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if data:
                handle.write(data)

    reader = threading.Thread(target=host_to_replay, daemon=True)
    reader.start()
    announced = False
    try:
        while not stop.is_set():
            data = handle.read_chunk()
            if data:
                os.write(master, data)
            if handle.finished.is_set() and not announced and not loop:
                announced = True
                _err(messages.CLI_REPLAY_DONE.format(path=path))
    finally:
        stop.set()
        os.write(wake_w, b"x")
        reader.join(2)
        if handle.mismatch_count:
            _err(messages.CLI_REPLAY_MISMATCHES.format(n=handle.mismatch_count))
        for fd in (master, wake_r, wake_w):
            os.close(fd)
    return 0


def _wait_for_host(master: int, stop: threading.Event) -> bool:
    """Wait until a program opens the PTY, so nothing is played into the void (or flushed by the
    host's open). The master reports POLLHUP while nobody holds the slave; the kernel offers no
    event for the open itself, so the HUP state is sampled every 50 ms. False if stopped first."""
    poller = select.poll()
    poller.register(master, select.POLLHUP)
    while not stop.is_set():
        events = poller.poll(50)
        if not any(mask & select.POLLHUP for _, mask in events):
            time.sleep(HOST_SETTLE_S)  # let the host finish configuring (and flushing) the port
            return True
        time.sleep(0.05)
    return False


# --- decode -------------------------------------------------------------------------------------------


def _json_option(text: str | None, name: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(messages.CLI_BAD_JSON.format(name=name, error=exc)) from None


def load_streams(raw: bytes) -> dict[str, list[tuple[float, bytes]]]:
    """A capture's rx and tx chunks with their times, or a raw byte file as one rx chunk at t=0."""
    try:
        lines = decode_lines(raw)
        capture = parse_capture(lines, torn_tail_ok=True)
    except Exception:  # not a capture file: decode the bytes as they are
        return {"rx": [(0.0, raw)], "tx": []}
    streams: dict[str, list[tuple[float, bytes]]] = {"rx": [], "tx": []}
    for e in capture.events:
        if e.type in streams and e.data:
            streams[e.type].append((e.t, e.data))
    return streams


def decode_streams(
    streams: dict[str, list[tuple[float, bytes]]],
    rx_framing: Any,
    rx_parser: Any,
    directions: tuple[str, ...],
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Frames of each direction through the same decoders the server uses, merged by time."""
    out: list[dict[str, Any]] = []
    dropped: dict[str, int] = {}
    for direction in directions:
        decoder = StreamDecoder(rx_framing or {"type": "line", "ending": "auto"}, rx_parser, 0)
        ends: list[tuple[int, float]] = []
        pos = 0
        events: list[DecodedFrame | FramingError] = []
        for t, chunk in streams.get(direction, []):
            pos += len(chunk)
            ends.append((pos, t))
            events += decoder.feed(chunk)
        events += decoder.flush()
        for ev in events:
            if isinstance(ev, FramingError):
                out.append(
                    {
                        "t": _time_at(ends, ev.offset),
                        "dir": direction,
                        "offset": ev.offset,
                        "error": ev.message,
                    }
                )
                continue
            text, enc = encode_output(ev.data, "utf8")
            item: dict[str, Any] = {
                "t": _time_at(ends, ev.end - 1),
                "dir": direction,
                "offset": ev.start,
                "data": text,
                "encoding": enc,
            }
            if ev.checksum_valid is not None:
                item["checksum_valid"] = ev.checksum_valid
            if ev.parsed is not None:
                item["parsed"] = ev.parsed
            out.append(item)
        dropped[direction] = decoder.frames_dropped
    out.sort(key=lambda item: (item["t"], item["dir"] != "tx", item["offset"]))
    return out, dropped


def _time_at(ends: list[tuple[int, float]], offset: int) -> float:
    for end, t in ends:
        if offset < end:
            return t
    return ends[-1][1] if ends else 0.0


def run_decode(
    file: str,
    protocol: str | None,
    rx_framing: str | None,
    rx_parser: str | None,
    fmt: str,
    direction: str,
    out: TextIO,
) -> int:
    raw = Path(file).read_bytes()
    resolved = effective(
        {
            "protocol": protocol,
            "rx_framing": _json_option(rx_framing, "--rx-framing"),
            "rx_parser": _json_option(rx_parser, "--rx-parser"),
        },
        {},
    )
    directions = ("rx", "tx") if direction == "both" else (direction,)
    frames, dropped = decode_streams(load_streams(raw), resolved.rx_framing, resolved.rx_parser, directions)
    for f in frames:
        if fmt == "jsonl":
            out.write(json.dumps(f, ensure_ascii=False) + "\n")
        elif "error" in f:
            out.write(f"{f['t']:12.6f} {f['dir']} @{f['offset']:<8} ERROR {f['error']}\n")
        else:
            parsed = " " + json.dumps(f["parsed"], ensure_ascii=False) if "parsed" in f else ""
            shown = (
                json.dumps(f["data"], ensure_ascii=False) if f["encoding"] == "utf8" else f"hex:{f['data']}"
            )
            out.write(f"{f['t']:12.6f} {f['dir']} @{f['offset']:<8} {shown}{parsed}\n")
    _err(messages.CLI_DECODED.format(n=len(frames), dropped=sum(dropped.values())))
    return 0
