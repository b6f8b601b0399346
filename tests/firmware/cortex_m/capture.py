"""Runs fault-demo.elf under qemu-system-arm once per report mode and writes what its UART printed, byte for
byte, to tests/data/crashes/cortex-m-qemu.json (the detector's unit tests read it; the firmware tests run the
same firmware live). Run from the repository root: ``python3 tests/firmware/cortex_m/capture.py``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from tests.firmware.machines import Machine  # noqa: E402

MODES = {
    "z": "Zephyr 3.x minimal log: NULL write escalated to HARD FAULT, Halting system",
    "m": "Zephyr 3.x full log: MemManage MPU FAULT, Halting system",
    "o": "Zephyr 1.x printk: MPU FAULT, Hardware exception, Fatal fault in thread",
    "n": "nRF Connect SDK: undefined instruction, Resetting system, the reboot",
    "c": "CmBacktrace bare metal: NULL write, registers, diagnosis, call stack",
    "b": "Mbed OS fault handler and error report",
    "a": "FreeRTOS demo vAssertCalled (configASSERT)",
}


def run(mode: str, workdir: Path) -> str:
    argv = ["qemu-system-arm", "-M", "mps2-an385", "-nographic", "-monitor", "none"]
    machine = Machine([*argv, "-kernel", str(HERE / "fault-demo.elf")], workdir).start()
    try:
        with socket.create_connection(("127.0.0.1", machine.port)) as s:
            data = b""
            s.settimeout(5)
            while b"ready" not in data or not data.endswith(b"\n"):
                data += s.recv(4096)
            s.sendall(mode.encode())
            s.settimeout(1.5)
            try:
                while chunk := s.recv(4096):
                    data += chunk
            except TimeoutError:
                pass
        return data.decode()
    finally:
        machine.kill()


def main() -> None:
    workdir = Path("/tmp/fault-demo-capture")
    workdir.mkdir(exist_ok=True)
    blocks = [{"mode": m, "from": what, "text": run(m, workdir)} for m, what in MODES.items()]
    doc = {
        "source": "tests/firmware/cortex_m/fault-demo.elf (this repository) under qemu-system-arm -M mps2-an385, "
        "captured by tests/firmware/cortex_m/capture.py",
        "licence": "same as this repository",
        "captured": time.strftime("%Y-%m-%d"),
        "blocks": blocks,
    }
    out = ROOT / "tests" / "data" / "crashes" / "cortex-m-qemu.json"
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(out, subprocess.list2cmdline(["modes", *MODES]))


if __name__ == "__main__":
    main()
