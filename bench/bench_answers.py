"""Issue 26: what four everyday questions cost an agent, in calls and bytes of text, before and after.

(a) "10 s of a u-blox M8T stream counted by message type, with the last position": the first ten
    epochs (one TIM-TP each) of ``tests/data/gnss/u-blox-m8t-time.log`` (real receiver data).
(b) "wait for the U-Boot prompt after boot": the U-Boot part of a real OpenWrt boot log
    (``bootlogs/openwrt-COVR-X1860``, autoboot stopped: its ``=>`` prompt follows).
(c) "Modbus RTU read of 10 holding registers": a device that answers 01 03 0000 000A.
(d) "which GPS sentences failed their checksum in the last 5 s": the last five epochs (one GGA
    each) of the real Quectel L76K NMEA log, three of their sentences with a corrupted checksum.

Every task runs through the MCP tools (in-process client, the in-memory opener fed the log bytes)
the way an agent would do it: *before* with what the tools offered until now (framed reads of every
frame; a match that returns everything up to it; hex or JSON frames), *after* with this issue's
``summary``, ``reply`` and decoded-value text. The *before* run uses the main checkout's code
(``--baseline-src``, default ``/work/main``) in a child process, so the figures compare the two
versions on the same bytes in the same run; *after* uses this checkout. Prints one table; asserts
nothing.

    python bench/bench_answers.py               # --baseline-src /work/main
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"  # copies of the real data set
M8T = DATA / "gnss" / "u-blox-m8t-time.log"
BOOT = DATA / "bootlogs" / "openwrt-COVR-X1860" / "Bootlog.txt"
NMEA = DATA / "nmea" / "quectel-l76k-nmea.log"
TIM_TP = b"\xb5\x62\x0d\x01"


def m8t_ten_seconds() -> bytes:
    data = M8T.read_bytes()
    starts = [i for i in range(len(data)) if data.startswith(TIM_TP, i)]
    return data[: starts[10]]


def uboot_until_prompt() -> bytes:
    text = BOOT.read_bytes()
    cut = text.index(b"Hit any key to stop autoboot")
    return text[: text.index(b"\n", cut) + 1] + b"\n=> "


def crc16(data: bytes) -> bytes:
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc.to_bytes(2, "little")


MODBUS_REQUEST = bytes.fromhex(
    "01030000000a"
)  # unit 1, read holding registers 0..9 (CRC added by the framing)
REGISTERS = [4660, 22136, 1002, 0, 65535, 17, 230, 1, 2, 3]
MODBUS_REPLY = bytes([1, 3, 20]) + b"".join(r.to_bytes(2, "big") for r in REGISTERS)


def nmea_last_five_seconds() -> tuple[bytes, int]:
    """An NMEA stream and the offset where its last five epochs start (three checksums broken)."""
    lines = [ln for ln in NMEA.read_bytes().splitlines(keepends=True) if ln.startswith(b"$")]
    ggas = [i for i, ln in enumerate(lines) if ln[3:6] == b"GGA"]
    window = lines[ggas[-5] :]
    for k in (1, len(window) // 2, len(window) - 2):  # three corrupted checksums
        line = window[k].rstrip(b"\r\n")
        window[k] = line[:-1] + (b"0" if line[-1:] != b"0" else b"1") + b"\r\n"
    history = b"".join(lines[: ggas[-5]])
    return history + b"".join(window), len(history)


async def _run(strategy: str) -> list[dict[str, Any]]:
    from mcp import Client

    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.fake import FakeOpener
    from serial_mcp.serial.manager import ConnectionManager

    opener = FakeOpener()
    gps, boot, gnss = opener.add("gps"), opener.add("boot"), opener.add("gnss")
    opener.add(
        "rtu", responder=lambda d: MODBUS_REPLY + crc16(MODBUS_REPLY) if d[:6] == MODBUS_REQUEST else None
    )
    rows: list[dict[str, Any]] = []
    calls: list[tuple[int, int]] = []

    async with Client(build_server(ConnectionManager(opener))) as c:

        async def tool(name: str, args: dict[str, Any]) -> Any:
            r = await c.call_tool(name, args)
            text = r.content[0].text if r.content else ""  # type: ignore[union-attr]
            calls.append(
                (len(text.encode()), len(json.dumps(r.structured_content or {}, separators=(",", ":"))))
            )
            if r.is_error:
                raise RuntimeError(text)
            return r.structured_content, text

        async def settle(cid: str, total: int) -> None:  # not an agent call: the bytes have arrived
            await c.call_tool(
                "read",
                {
                    "connection_id": cid,
                    "from": 0,
                    "protocol": "raw",
                    "encoding": "hex",
                    "max_bytes": total,
                    "timeout_ms": 10_000,
                },
            )

        def row(task: str, answer: str) -> None:
            rows.append(
                {
                    "task": task,
                    "calls": len(calls),
                    "text": sum(t for t, _ in calls),
                    "structured": sum(s for _, s in calls),
                    "answer": answer[:160],
                }
            )
            calls.clear()

        # (a) 10 s of u-blox M8T: counts per message type and the last position
        data = m8t_ten_seconds()
        out, _ = await tool("open", {"port": "gnss", "protocol": "gnss"})
        cid = out["connection_id"]
        gnss.feed(data)
        await settle(cid, len(data))
        if strategy == "before":
            text = ""
            while True:
                out, text_part = await tool("read", {"connection_id": cid, "timeout_ms": 0})
                text += text_part
                if not out.get("frames"):
                    break
            row("a: 10 s of M8T by type + position", f"{text.count('#')} frames in text")
        else:
            out, text = await tool("read", {"connection_id": cid, "summary": True, "timeout_ms": 0})
            row("a: 10 s of M8T by type + position", text)

        # (b) wait for the U-Boot prompt after boot
        data = uboot_until_prompt()
        out, _ = await tool("open", {"port": "boot"})
        cid = out["connection_id"]
        boot.feed(data)
        args = {"connection_id": cid, "match": "=> ", "timeout_ms": 5000}
        if strategy == "after":
            args["reply"] = "tail:60"
        out, text = await tool("read", args)
        row("b: wait for the U-Boot prompt", text)

        # (c) Modbus RTU read of 10 registers
        out, _ = await tool("open", {"port": "rtu", "protocol": "modbus_rtu"})
        cid = out["connection_id"]
        out, text = await tool(
            "transact",
            {"connection_id": cid, "data": MODBUS_REQUEST.hex(), "encoding": "hex", "timeout_ms": 2000},
        )
        row("c: Modbus RTU, 10 registers", text)

        # (d) which GPS sentences failed their checksum in the last 5 s
        stream, window = nmea_last_five_seconds()
        out, _ = await tool("open", {"port": "gps", "protocol": "nmea0183"})
        cid = out["connection_id"]
        gps.feed(stream)
        await settle(cid, len(stream))
        if strategy == "before":  # validate drops them and only counts: read them unvalidated, every frame
            out, text = await tool(
                "read",
                {
                    "connection_id": cid,
                    "from": window,
                    "rx_parser": {"type": "nmea"},
                    "max_frames": 10_000,
                    "timeout_ms": 0,
                },
            )
            bad = [f["data"][:6] for f in out["frames"] if f.get("checksum_valid") is False]
            row("d: bad checksums in the last 5 s", f"{len(bad)} bad: {bad}")
        else:
            out, text = await tool(
                "read", {"connection_id": cid, "from": window, "summary": True, "timeout_ms": 0}
            )
            row("d: bad checksums in the last 5 s", text)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-src", default="/work/main", help="checkout whose code is 'before'")
    parser.add_argument("--strategy", choices=["before", "after"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    import anyio

    if args.strategy:  # the child process: one strategy, rows as JSON
        print(json.dumps(anyio.run(_run, args.strategy)))
        return
    env = {**os.environ, "PYTHONPATH": args.baseline_src}
    child = subprocess.run(
        [sys.executable, __file__, "--strategy", "before"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=args.baseline_src,
    )
    before = json.loads(child.stdout.strip().splitlines()[-1])
    after = anyio.run(_run, "after")
    print(f"{'task':<36} {'calls':>11} {'text bytes':>19} {'structured bytes':>21}")
    for b, a in zip(before, after, strict=True):
        calls = f"{b['calls']:>5} -> {a['calls']:<3}"
        text = f"{b['text']:>9,} -> {a['text']:<7,}"
        structured = f"{b['structured']:>10,} -> {a['structured']:<8,}"
        print(f"{a['task']:<36} {calls} {text} {structured}")
    print()
    for a in after:
        print(f"after {a['task'][:1]}: {a['answer']}")


if __name__ == "__main__":
    main()
