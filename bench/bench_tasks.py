"""Issue 39's twelve bench tasks, each played on a simulated device the way a new agent would, with
the calls it makes and the bytes of text it reads; every answer is checked (a wrong one is WRONG,
never done).

The agent is an in-process MCP client of ``build_server`` over ``task_devices.BenchOpener`` (the
built-in ``sim://`` simulators and devices made from the real logs in tests/data). It thinks
``--latency`` seconds between two calls of a task (default 2 s), so a U-Boot countdown runs on while
it does. Text bytes are the content text of each call (what the agent reads); closes are not counted
(the issue: "closes not needed"). Task 4's offline decode is the ``serial-mcp decode`` CLI: one call,
its stdout the text read.

Each task has two paths: *today's* (``open`` then the question by ``connection_id``) and the
*one-call* path (``--one-call``: ``read``/``write``/``transact``/``capture_boot`` take ``port``),
which runs only where the server has it (``transact``'s input schema has ``port``: an older revision
does not); otherwise its rows say so.

    python bench/bench_tasks.py                 # today's paths, 2 s between calls (about 1.5 min)
    python bench/bench_tasks.py --one-call      # the one-call paths
    python bench/bench_tasks.py --with-esptool  # also task 11 (runs esptool in a child process)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio
import task_devices as dev
from mcp import Client

from serial_mcp.core.capture import parse_capture
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.firmware_elf import ElfScope
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.store.captures import CaptureStore

NOT_AVAILABLE = "one-call path not available in this build"
GOALS = "goals (issue 39): twelve tasks <= 24 calls; 'what are these four ports' <= 2 calls, <= 1.5 KB text"


class Wrong(Exception):
    """The answer the agent got is not the right one (or a call failed)."""


@dataclass
class Agent:
    """The agent's client: counts calls and text bytes, thinks ``latency_s`` between calls."""

    client: Client
    latency_s: float
    one_call: bool = False
    calls: list[tuple[str, int]] = field(default_factory=list)
    text: str = ""
    held: dict[str, str] = field(default_factory=dict)  # port -> connection, for the closes

    async def call(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        if self.calls:
            await anyio.sleep(self.latency_s)  # the agent reads the last answer and thinks
        r = await self.client.call_tool(name, args)
        text = "".join(getattr(part, "text", "") for part in r.content)
        self.calls.append((name, len(text.encode())))
        self.text += text + "\n"
        if r.is_error:
            raise Wrong(f"{name} failed: {text[:300]}")
        out = r.structured_content or {}
        if name == "open":
            self.held[args["port"]] = out["connection_id"]
        return out, text

    async def shell(self, argv: list[str]) -> str:
        """A command the agent runs (one call; its stdout and stderr are the text it reads)."""
        if self.calls:
            await anyio.sleep(self.latency_s)
        env = {**os.environ, "PYTHONPATH": str(dev.ROOT)}  # this checkout's serial_mcp
        r = await anyio.run_process(argv, check=False, env=env)
        text = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
        self.calls.append(("shell", len(text.encode())))
        self.text += text + "\n"
        if r.returncode:
            raise Wrong(f"{argv[2:4]} exited {r.returncode}: {text[:300]}")
        return text

    async def close_all(self) -> None:  # not counted
        for cid in self.held.values():
            await self.client.call_tool("close", {"connection_id": cid})
        listed = await self.client.call_tool("list_connections", {})
        for conn in (listed.structured_content or {}).get("connections", []):
            await self.client.call_tool("close", {"connection_id": conn["connection_id"]})
        self.held.clear()


@dataclass
class Bed:
    """The devices and what the tasks need to know about them."""

    opener: dev.BenchOpener
    scale: float
    captures: Path


def need(text: str, *facts: str) -> None:
    missing = [f for f in facts if f not in text]
    if missing:
        raise Wrong(f"not in the text read: {missing}")


# --- the twelve tasks: each plays its path, then checks the answer in the text the agent read -----
AT_STEPS = [{"send": f"{cmd}\r", "expect": "OK"} for cmd in ("ATI", "AT+CGSN", "AT+CPIN?", "AT+CSQ")]


async def t1_modem(a: Agent, bed: Bed) -> None:
    if a.one_call:
        await a.call("transact", {"port": "modem", "protocol": "at_command", "steps": AT_STEPS})
    else:
        cid = (await a.call("open", {"port": "modem", "protocol": "at_command"}))[0]["connection_id"]
        await a.call("transact", {"connection_id": cid, "steps": AT_STEPS})
    need(a.text, *dev.MODEM_FACTS.values())


STOP_AUTOBOOT = [{"on": "Hit any key", "send": " ", "times": 1}]


async def t2_uboot(a: Agent, bed: Bed) -> None:
    printenv = {"data": "printenv\r", "match": "Environment size", "timeout_ms": 5000}
    if a.one_call:
        steps = [
            {"expect": "=> ", "respond": STOP_AUTOBOOT[0], "reply": "match"},
            {"send": "printenv\r", "expect": "Environment size"},
        ]
        await a.call("transact", {"port": "uboot", "steps": steps, "timeout_ms": 10_000})
    else:
        cid = (await a.call("open", {"port": "uboot", "respond": STOP_AUTOBOOT}))[0]["connection_id"]
        await a.call("transact", {"connection_id": cid, **printenv})
    board = bed.opener.last["uboot"]
    assert isinstance(board, dev.UBootBoard)
    if board.booted_kernel or "Starting kernel" in a.text:
        raise Wrong("the board booted Linux")
    need(a.text, "bootcmd=nmbm", "ethaddr=a8:63:7d:2f:05:a8")


async def t3_gps_fix(a: Agent, bed: Bed) -> None:
    window = round(1500 * bed.scale)
    if a.one_call:
        await a.call("read", {"port": "gps", "protocol": "nmea0183", "summary": True, "timeout_ms": window})
    else:
        cid = (await a.call("open", {"port": "gps", "protocol": "nmea0183"}))[0]["connection_id"]
        await a.call("read", {"connection_id": cid, "summary": True, "timeout_ms": 0})
    streamer = bed.opener.last["gps"]
    assert isinstance(streamer, dev.Streamer)
    fixes = [dev.gga_fix(e.split(b"\r\n")[0]) for e in dev.nmea_epochs()[: streamer.sent]]
    for fix in fixes[-2:][::-1]:  # the last fix heard (or the one before, if one came meanwhile)
        facts = (f"fix={dev.GGA_QUALITY[fix['quality']]}", f"sv={fix['sats']}", f"hdop={fix['hdop']}")
        if all(
            f in a.text for f in (*facts, f"lat={dev.degrees(fix['lat'])}", f"lon=-{dev.degrees(fix['lon'])}")
        ):
            return
    raise Wrong(f"the last fix {fixes[-1:]} is not in the text read")


async def t4_record_decode(a: Agent, bed: Bed) -> None:
    path = bed.captures / f"gps5s-{len(bed.opener.last)}.jsonl"
    cid = (await a.call("open", {"port": "gps2"}))[0]["connection_id"]
    record = {"action": "start", "path": path.name, "duration_ms": round(5000 * bed.scale)}
    await a.call("record", {"connection_id": cid, **record})
    await anyio.sleep(5.5 * bed.scale)  # the recording runs; the agent waits for it (no call)
    nmea = json.dumps({"type": "nmea"})
    argv = [
        sys.executable,
        "-m",
        "serial_mcp",
        "decode",
        str(path),
        "--rx-framing",
        nmea,
        "--rx-parser",
        nmea,
    ]
    await a.shell(argv)
    recorded = b"".join(
        bytes.fromhex(r["data"])
        for r in map(json.loads, (bed.captures / path.name).read_text().splitlines())
        if r.get("type") == "rx"
    )
    sentences = [ln for ln in recorded.split(b"\r\n") if ln.startswith(b"$") and b"*" in ln]
    bad = [s for s in sentences if not _checksum_ok(s)]
    if len(sentences) < 40 or not bad:
        raise Wrong(f"{len(sentences)} sentences, {len(bad)} bad recorded: not 5 s of the stream")
    bad_lines = [ln for ln in a.text.splitlines() if "BAD" in ln]
    named = [s[1:6].decode() for s in bad]  # in order: GNGLL BAD, ...
    if len(bad_lines) != len(bad) or any(
        f"{n} BAD" not in ln for n, ln in zip(named, bad_lines, strict=False)
    ):
        raise Wrong(f"decode names {len(bad_lines)} bad checksums, the recording has {len(bad)}")


def _checksum_ok(sentence: bytes) -> bool:
    body, _, check = sentence[1:].partition(b"*")
    value = 0
    for b in body:
        value ^= b
    return check[:2].upper() == b"%02X" % value


async def t5_binary(a: Agent, bed: Bed) -> None:
    read = {"rx_framing": dev.FRAMING, "max_frames": 10, "timeout_ms": 3000}
    if a.one_call:
        await a.call("read", {"port": "frames", **read})
    else:
        cid = (await a.call("open", {"port": "frames", "rx_framing": dev.FRAMING}))[0]["connection_id"]
        await a.call("read", {"connection_id": cid, "max_frames": 10, "timeout_ms": 3000})
    seqs = sorted(int(seq, 16) for seq in re.findall(r'BAD checksum [^:]*: "([0-9a-f]{2})', a.text))
    if seqs != list(dev.BAD_SEQS):
        raise Wrong(f"the frames read as bad are seqs {seqs}")


LOGIN = [
    {"send": "\r", "expect": "login:"},
    {"send": "root\r", "expect": "Password:"},
    {"send": "root\r", "expect": "# "},
    {"send": "uname -a\r", "expect": "# "},
    {"send": "free\r", "expect": "# "},
]


async def t6_linux(a: Agent, bed: Bed) -> None:
    if a.one_call:
        await a.call("transact", {"port": "linux", "steps": LOGIN})
    else:
        cid = (await a.call("open", {"port": "linux"}))[0]["connection_id"]
        await a.call("transact", {"connection_id": cid, "steps": LOGIN})
    need(a.text, dev.LINUX_UNAME, "505868", "466532")


SCRIPT = (
    "total = 0\nfor i in range(6):\n    total += i * i\nprint('sum of squares', total)\nprint(total / 0)\n"
)


async def t7_micropython(a: Agent, bed: Bed) -> None:
    steps = [{"micropython": SCRIPT}]
    if a.one_call:
        await a.call("transact", {"port": "sim://micropython", "steps": steps})
    else:
        cid = (await a.call("open", {"port": "sim://micropython"}))[0]["connection_id"]
        await a.call("transact", {"connection_id": cid, "steps": steps})
    need(a.text, "sum of squares 55", "ZeroDivisionError")


async def t8_modbus(a: Agent, bed: Bed) -> None:
    ask = {"data": "01030000000a", "encoding": "hex", "timeout_ms": 2000}
    if a.one_call:
        await a.call("transact", {"port": "rtu", "baud_rate": 9600, "protocol": "modbus_rtu", **ask})
    else:
        opened = await a.call("open", {"port": "rtu", "baud_rate": 9600, "protocol": "modbus_rtu"})
        await a.call("transact", {"connection_id": opened[0]["connection_id"], **ask})
    need(a.text, ", ".join(map(str, dev.REGISTERS)))


async def t9_ublox(a: Agent, bed: Bed) -> None:
    window = round(10_000 * bed.scale)
    if a.one_call:
        await a.call("read", {"port": "ublox", "protocol": "gnss", "summary": True, "timeout_ms": window})
    else:
        cid = (await a.call("open", {"port": "ublox", "protocol": "gnss"}))[0]["connection_id"]
        await a.call("read", {"connection_id": cid, "summary": True, "timeout_ms": window})
    streamer = bed.opener.last["ublox"]
    assert isinstance(streamer, dev.Streamer)
    heard = dev.m8t_epochs()[: streamer.sent]
    lat, lon = dev.last_position(heard)
    need(a.text, f"lat={lat / 1e7:.7f} lon={lon / 1e7:.7f}")
    for kind in ("TIM-TP", "NAV-SAT", "NAV-STATUS", "NAV-POSLLH", "NAV-DOP", "TIM-SVIN"):
        if not any(f"ubx {kind} {n} " in a.text for n in (len(heard), len(heard) - 1)):
            raise Wrong(f"{kind}: not counted as the {len(heard)} the receiver sent")


async def t10_crash_loop(a: Agent, bed: Bed) -> None:
    window = round(10_000 * bed.scale)
    cid = (await a.call("open", {"port": "crashy", "elf": "fault-demo.elf"}))[0]["connection_id"]
    await a.call("read", {"connection_id": cid, "summary": True, "timeout_ms": window})
    need(a.text, dev.CRASH_WHERE, "boot loop at offset", "boots in")


async def t11_esptool(a: Agent, bed: Bed) -> None:
    """esptool (from PyPI, ``--no-stub``: the simulator runs no stub) through the RFC 2217 mirror of a
    recorded connection; its hard reset at the end boots the new image."""
    from tests.pty.test_esptool_sim import app_image  # needs esptool's image writer

    image = app_image(b"bench_tasks_app", 6000)
    app = bed.captures / "app.bin"
    app.write_bytes(image)
    opening = {"port": "sim://esp32-rom", "mirror": "rfc2217+esp-reset", "record": "flash.jsonl"}
    out, _ = await a.call("open", opening)
    esptool = [sys.executable, "-m", "esptool", "--chip", "esp32", "--no-stub", "--port", out["mirror_url"]]
    await a.shell([*esptool, "write-flash", "0x10000", str(app)])  # verifies the MD5, then resets
    boot = {"match": "Project name:     bench_tasks_app", "reply": "tail:1200", "timeout_ms": 20_000}
    await a.call("read", {"connection_id": out["connection_id"], **boot})
    need(a.text, "Hash of data verified.", "Loaded app from partition at offset 0x10000", "bench_tasks_app")
    kept = parse_capture((bed.captures / "flash.jsonl").read_text().splitlines()).payload("rx")
    if f"MD5 {hashlib.md5(image).hexdigest()}".encode() not in kept:
        raise Wrong("the log kept has no boot of the image")


async def t12_identify(a: Agent, bed: Bed) -> None:
    ports = ["modem4", "sim://micropython", "gps4", "uboot4"]
    out, text = await a.call("identify", {"ports": ports, "probe": True})
    kinds = [p.get("kind") for p in out["ports"]]
    if kinds != ["at_modem", "micropython", "nmea_gps", "uboot"]:
        raise Wrong(f"kinds {kinds}")
    need(text, *(f"{p}: {k}" for p, k in zip(ports, kinds, strict=True)))


Task = Callable[[Agent, Bed], Awaitable[None]]
TASKS: list[tuple[str, Task]] = [
    ("1 modem identity", t1_modem),
    ("2 stop U-Boot autoboot, printenv", t2_uboot),
    ("3 GPS fix", t3_gps_fix),
    ("4 record 5 s of GPS, decode offline", t4_record_decode),
    ("5 ten binary frames: bad seqs", t5_binary),
    ("6 Linux login, uname -a, free", t6_linux),
    ("7 MicroPython script output+error", t7_micropython),
    ("8 Modbus RTU registers 0-9", t8_modbus),
    ("9 u-blox 10 s: types, position", t9_ublox),
    ("10 reboot loop: crash where, how often", t10_crash_loop),
    ("11 flash the ESP32 with esptool", t11_esptool),
    ("12 four unknown ports", t12_identify),
]
SAME_PATH = {t4_record_decode, t10_crash_loop, t11_esptool, t12_identify}  # no port-taking call shortens them


def make_bed(scale: float) -> dev.BenchOpener:
    opener = dev.BenchOpener()
    opener.fake.add("modem", responder=dev.QuectelModem())
    opener.fake.add("modem4", responder=dev.QuectelModem())
    opener.add_board("uboot", lambda d, t: dev.UBootBoard(d, t, scale))
    epochs = dev.nmea_epochs()
    opener.add_board("gps", lambda d, t: dev.Streamer(d, t, epochs, scale))
    opener.add_board("gps4", lambda d, t: dev.Streamer(d, t, epochs, scale))
    broken, _ = dev.break_checksums(epochs)
    opener.add_board("gps2", lambda d, t: dev.Streamer(d, t, broken, scale))
    frames = dev.binary_frames()
    opener.add_board(
        "frames", lambda d, t: dev.Streamer(d, t, [frames[i : i + 9] for i in range(0, 90, 9)], 0.05)
    )
    opener.fake.add("linux", responder=dev.LinuxConsole())
    rtu = opener.fake.add("rtu")
    rtu.responder = dev.modbus_slave(rtu)
    m8t = dev.m8t_epochs()
    opener.add_board("ublox", lambda d, t: dev.Streamer(d, t, m8t, scale))
    opener.add_board("crashy", lambda d, t: dev.CrashLoop(d, t, 2 * scale))
    opener.fake.add("uboot4", responder=lambda data: b"\r\n=> " if data.endswith(b"\r") else None)
    return opener


@dataclass
class Row:
    task: str
    calls: int
    text: int
    verdict: str
    read: str = ""


async def play(
    *,
    one_call: bool,
    latency_s: float,
    scale: float,
    only: set[str] | None = None,
    esptool: bool = False,
) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        captures = Path(tmp)
        opener = make_bed(scale)
        manager = ConnectionManager(opener)
        scope = ElfScope(firmware_dirs=(dev.FAULT_ELF_DIR,))
        server = build_server(manager, port_lister=list, captures=CaptureStore(captures), elf_scope=scope)
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            has_port = "port" in tools["transact"].input_schema.get("properties", {})
            bed = Bed(opener, scale, captures)
            for name, task in TASKS:
                if only and name.split()[0] not in only:
                    continue
                if task is t11_esptool and not esptool:
                    rows.append(Row(name, 0, 0, "not run (--with-esptool)"))
                    continue
                if one_call and not has_port and task not in SAME_PATH:
                    rows.append(Row(name, 0, 0, NOT_AVAILABLE))
                    continue
                agent = Agent(client, latency_s * scale, one_call=one_call)
                try:
                    with anyio.fail_after(240):
                        await task(agent, bed)
                    verdict = "right"
                except (Wrong, TimeoutError) as exc:
                    verdict = f"WRONG: {exc}"[:200]
                rows.append(Row(name, len(agent.calls), sum(n for _, n in agent.calls), verdict, agent.text))
                await agent.close_all()
        await manager.close_all()
    return rows


def table(rows: list[Row], title: str) -> str:
    right = [r for r in rows if r.verdict == "right"]
    out = [title, f"{'task':<40} {'calls':>5} {'text B':>7}  answer"]
    out += [f"{r.task:<40} {r.calls:>5} {r.text:>7,}  {r.verdict}" for r in rows]
    total = f"total ({len(right)} of {len(rows)} right)"
    out.append(f"{total:<40} {sum(r.calls for r in right):>5} {sum(r.text for r in right):>7,}")
    four = next((r for r in right if r.task.startswith("12 ")), None)
    ports = f"{four.calls} calls, {four.text:,} B" if four else "not right"
    played = sum(r.calls for r in rows)
    out.append(f"{GOALS}; here: {played} calls in all rows played, four ports {ports}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--one-call", action="store_true", help="the paths with port= instead of open")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the agent thinks between calls")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="device clocks and waits x this (0.1: faster)"
    )
    parser.add_argument("--with-esptool", action="store_true", help="also task 11 (esptool, a child process)")
    parser.add_argument("--only", help="task numbers, comma-separated")
    parser.add_argument("--show", action="store_true", help="print the text each task read")
    args = parser.parse_args()
    one_call = args.one_call
    rows = anyio.run(
        lambda: play(
            one_call=one_call,
            latency_s=args.latency,
            scale=args.scale,
            only=set(args.only.split(",")) if args.only else None,
            esptool=args.with_esptool,
        )
    )
    for row in rows if args.show else []:
        print(f"=== {row.task}\n{row.read}")
    path = "today's paths (open, then connection_id)"
    if one_call:
        path = "one-call paths"
    print(
        table(rows, f"{path}; the agent thinks {args.latency} s between calls; device clocks x{args.scale}")
    )


if __name__ == "__main__":
    main()
