#!/usr/bin/env python3
"""Build the sample capture files in ``captures/`` from the real device data in ``tests/data``.

Reproducible: no randomness and fixed ``created`` times, so running it again gives identical
files (``--check`` verifies that). The received bytes are exact copies of the upstream data;
what is synthesised — and said so in ``captures/README.md`` — is the timing and the chunking:
each byte is placed on the wire at the recorded baud rate (start + data + parity + stop bits
per character), lines start no earlier than the device's own timestamps where it prints them,
and bytes are grouped into rx chunks the way a USB serial adapter hands them over (a chunk ends
after an idle gap of two characters or 16 ms after it began).

    python tools/make_sample_captures.py [--data tests/data] [--out captures] [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serial_mcp.core.capture import (  # noqa: E402
    CaptureEvent,
    CaptureHeader,
    capture_text,
    parse_capture,
)

SOURCE = "serial-mcp tools/make_sample_captures.py"
LATENCY = 0.016  # a USB serial adapter's latency timer (FTDI default): longest span of one chunk
MAX_CHUNK = 4096


@dataclass
class Session:
    """Builds one capture: host writes, device output on a simulated wire, control changes."""

    baud: int
    bits_per_char: int = 10  # 8N1 and 7E1 are both 10 bits on the wire
    events: list[CaptureEvent] = field(default_factory=list)
    wire_end: float = 0.0  # when the device's transmitter is free again
    rx_offset: int = 0

    @property
    def char_time(self) -> float:
        return self.bits_per_char / self.baud

    def event(self, t: float, kind: str, **fields: object) -> None:
        self.events.append(CaptureEvent(t=round(t, 6), type=kind, fields=dict(fields)))

    def tx(self, t: float, data: bytes) -> float:
        """The host writes ``data`` at ``t``; returns when its last byte has left the wire."""
        self.events.append(CaptureEvent(t=round(t, 6), type="tx", data=data))
        return t + len(data) * self.char_time

    def emit(self, lines: Iterable[tuple[float, bytes]]) -> None:
        """Device output: each piece starts at its time or when the previous one is sent, whichever
        is later; the bytes become rx chunks as the adapter would deliver them."""
        arrivals: list[tuple[float, int]] = []
        cursor = self.wire_end
        for start, data in lines:
            cursor = max(cursor, start)
            for byte in data:
                cursor += self.char_time
                arrivals.append((cursor, byte))
        self.wire_end = cursor
        chunk = bytearray()
        first = last = 0.0
        for when, byte in arrivals:
            if chunk and (
                when - last > 2 * self.char_time or when - first > LATENCY or len(chunk) >= MAX_CHUNK
            ):
                self._rx(last, bytes(chunk))
                chunk.clear()
            if not chunk:
                first = when
            chunk.append(byte)
            last = when
        if chunk:
            self._rx(last, bytes(chunk))

    def _rx(self, last_byte: float, data: bytes) -> None:
        # delivered a moment after the last byte (the adapter's idle detection)
        t = round(last_byte + 2 * self.char_time, 6)
        self.events.append(CaptureEvent(t=t, type="rx", data=data, offset=self.rx_offset))
        self.rx_offset += len(data)

    def text(self, header: CaptureHeader) -> str:
        self.events.sort(key=lambda e: e.t)  # stable: equal times keep their order
        return capture_text(header, self.events)


def header(
    created: str, port: str, baud: int, note: str, parity: str = "N", bytesize: int = 8
) -> CaptureHeader:
    settings = {
        "baudrate": baud,
        "bytesize": bytesize,
        "parity": parity,
        "stopbits": 1,
        "flow_control": "none",
    }
    return CaptureHeader(created=created, port=port, settings=settings, source=SOURCE, note=note)


def device_lines(raw: bytes, eol: bytes) -> list[bytes]:
    """Split keeping each line's terminator (the last piece may have none)."""
    parts = raw.split(eol)
    lines = [p + eol for p in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


def without_comments(raw: bytes, eol: bytes) -> bytes:
    """gpsd test logs start with ``#`` commentary that is not device output."""
    return b"".join(line for line in device_lines(raw, eol) if not line.startswith(b"#"))


# --- samples ---------------------------------------------------------------------------------------


def gps_quectel(data: Path) -> str:
    """Quectel L76K at 115200, 5 Hz: ~3 s of its NMEA stream, starting mid-epoch as captured."""
    raw = without_comments((data / "nmea/quectel-l76k-nmea.log").read_bytes(), b"\n")
    lines = device_lines(raw, b"\n")
    s = Session(baud=115200)
    s.event(0.0, "open")
    epoch0: float | None = None
    epochs = 0
    start = 0.02  # the tail of an epoch already under way when the port was opened
    out: list[tuple[float, bytes]] = []
    for line in lines:
        if line.startswith(b"$GNGGA"):
            utc = line.split(b",")[1]
            seconds = int(utc[0:2]) * 3600 + int(utc[2:4]) * 60 + float(utc[4:])
            epoch0 = seconds if epoch0 is None else epoch0
            epochs += 1
            if epochs > 16:
                break
            start = 0.25 + (seconds - epoch0) + 0.035  # output starts ~35 ms into the epoch
        out.append((start, line))
    s.emit(out)
    s.event(s.wire_end + 0.15, "close")
    note = (
        "Quectel L76K GNSS receiver, NMEA 0183 at 5 Hz (GP/GL/BD talkers, $GPTXT). Bytes from "
        "ntpsec/gpsd test/daemon/quectel-l76k-nmea.log (BSD-2-Clause); timing synthesised."
    )
    return s.text(header("2026-08-05T05:52:34.000000Z", "/dev/ttyAMA0", 115200, note))


def gps_gpsdf(data: Path) -> str:
    """GPSD Forwarder (Android): 4 epochs at 1 Hz, blank lines between sentences, bad $PGLOR sums."""
    raw = without_comments((data / "nmea/gpsdf.log").read_bytes(), b"\r\n")
    lines = device_lines(raw, b"\r\n")
    s = Session(baud=115200)
    s.event(0.0, "open")
    epochs = 0
    start = 0.05
    out: list[tuple[float, bytes]] = []
    for line in lines:
        if line.startswith(b"$GPGGA"):
            epochs += 1
            if epochs > 4:
                break
            start = 0.30 + (epochs - 1) * 1.0
        out.append((start, line))
    s.emit(out)
    s.event(s.wire_end + 0.2, "close")
    note = (
        "GPSD Forwarder app on a Samsung SM-T510 (Android 9): NMEA with proprietary $PGLOR sentences, "
        "some with wrong checksums (a real device bug). Bytes from ntpsec/gpsd test/daemon/gpsdf.log "
        "(BSD-2-Clause); timing synthesised."
    )
    return s.text(header("2020-02-01T16:01:44.000000Z", "/dev/ttyUSB0", 115200, note))


_ESP_STAMP = re.compile(rb"^(?:\x1b\[[0-9;]*[A-Za-z])*[EWIDV] \((\d+)\) ")


def esp32_boot(data: Path) -> str:
    """ESP32 reset through RTS (EN), two ROM banners, bootloader errors, app start, config, Wi-Fi."""
    lines = device_lines((data / "bootlogs/esp32/esp32-mdf-boot.txt").read_bytes(), b"\n")[:100]
    s = Session(baud=115200)
    s.event(0.0, "open")
    s.event(0.100, "control", dtr=False, rts=True)  # EN held low: chip in reset
    s.event(0.200, "control", dtr=False, rts=False)  # EN released: the chip boots
    out: list[tuple[float, bytes]] = []
    wire = 0.235  # the ROM prints its banner ~35 ms after reset
    offset: float | None = None  # the device clock's zero on our time line
    last_ms = -1
    banners = 0
    for line in lines:
        start = wire  # by default a line follows the previous one
        if line.startswith(b"ets "):
            banners += 1
            if banners == 2:  # the RTC watchdog resets the chip after the failed first boot
                start = wire + 0.300
                offset, last_ms = start, -1
        stamp = _ESP_STAMP.match(line)
        if stamp:
            ms = int(stamp.group(1))
            if offset is None or ms < last_ms - 100:  # a new clock (bootloader -> app)
                offset = start - ms / 1000
            last_ms = ms
            start = max(start, offset + ms / 1000)
        out.append((start, line))
        wire = start + len(line) * s.char_time
    s.emit(out)
    s.event(s.wire_end + 0.5, "close")
    note = (
        "ESP32 (ESP-MDF light bulb example) booting: ROM banners (power-on, RTC watchdog reset), "
        "bootloader errors, app log with ANSI colours and terminal probes, mdf> prompt, BluFi "
        "provisioning, Wi-Fi connect. Bytes from espressif/esp-idf-monitor test/host_test/inputs/in2.txt "
        "(Apache-2.0); the RTS reset and the timing are synthesised."
    )
    return s.text(header("2018-06-01T09:00:00.000000Z", "/dev/ttyUSB0", 115200, note))


def uboot_mt7622(data: Path) -> str:
    """MT7622 router: BootROM, preloader, U-Boot menu and autoboot, ATF, the first kernel lines."""
    lines = device_lines((data / "bootlogs/openwrt-M32/Bootlog.txt").read_bytes(), b"\r\n")[:380]
    power_on = 0.10
    # pauses before a line, in seconds (what the firmware is doing while the console is quiet)
    pauses = {
        b"[EMI] DRAMC calibration end": 0.180,
        b"[PART] load speed: 10147KB/s": 0.042,
        b"[PART] load speed: 9429KB/s": 0.006,
        b"U-Boot 2014.04": 0.120,
        b"ETH already turn on": 3.000,  # bootdelay=3 behind the boot menu
        b" 8192 bytes read": 0.010,
        b" 2988032 bytes read": 0.320,
        b"   Verifying Hash Integrity": 0.060,
        b"   Uncompressing Kernel Image": 0.650,
    }
    stretch = b"mcast upgrade timeout."  # absorbs the rest, so ATF's own clock lines up

    def schedule(stretch_pause: float) -> list[tuple[float, bytes]]:
        out: list[tuple[float, bytes]] = []
        cursor = power_on
        kernel0: float | None = None
        for line in lines:
            start = cursor
            for prefix, pause in pauses.items():
                if line.startswith(prefix):
                    start += pause
            if line.startswith(stretch):
                start += stretch_pause
            atf = re.match(rb"\[ATF\]\[\s*([\d.]+)\]", line)
            if atf:  # ATF prints seconds since power-on
                start = max(start, power_on + float(atf.group(1)))
                kernel0 = start + 0.004
            kernel = re.match(rb"\[\s*([\d.]+)\] ", line)
            if kernel and kernel0 is not None:
                start = max(start, kernel0 + float(kernel.group(1)))
            out.append((start, line))
            cursor = start + len(line) * 10 / 115200
        return out

    first_atf = next(i for i, line in enumerate(lines) if line.startswith(b"[ATF]"))
    unstretched = schedule(0.0)
    atf_due = power_on + 13.425391
    gap = atf_due - (unstretched[first_atf - 1][0] + len(lines[first_atf - 1]) * 10 / 115200) - 0.002
    s = Session(baud=115200)
    s.event(0.0, "open")
    s.event(power_on, "marker", label="power on")
    s.emit(schedule(max(gap, 0.0)))
    s.event(s.wire_end + 0.3, "close")
    note = (
        "MediaTek MT7622 router (D-Link M32): BootROM F0: lines, preloader, U-Boot 2014.04 boot menu "
        "with autoboot, FIT image load, ATF, Linux 4.4 early boot. Bytes from RolandoMagico/openwrt-misc "
        "branch M32 Bootlog.txt (MIT); timing synthesised (ATF's own clock anchors the kernel start)."
    )
    return s.text(header("2022-05-01T12:00:00.000000Z", "/dev/ttyUSB0", 115200, note))


def modbus_ascii(data: Path) -> str:
    """Modbus ASCII master polling at 9600 7E1: request -> response pairs from published vectors."""
    vectors = json.loads((data / "modbus_ascii/modbus_ascii_vectors.json").read_text())
    frames = {v["wire"].encode("ascii") for v in vectors["valid_frames"]}
    exchanges = [
        (b":010610010320C5\r\n", b":010610010320C5\r\n"),  # Delta DTB4824: write 0x1001 = 800, echoed
        (b":010310010001EA\r\n", b":0103020320D7\r\n"),  # Delta DTB4824: read 0x1001 -> 0x0320
        (b":1103007C00026E\r\n", b":110304008D008ECD\r\n"),  # slave 17: read 2 regs at 0x7C
        (b":010310010001EA\r\n", b":0103020320D7\r\n"),  # poll again
        (b":1103007C00026E\r\n", b":110304008D008ECD\r\n"),
    ]
    for request, response in exchanges:
        assert request in frames and response in frames, (request, response)
    s = Session(baud=9600)
    s.event(0.0, "open")
    for i, (request, response) in enumerate(exchanges):
        sent = s.tx(0.200 + 0.500 * i, request)
        turnaround = 0.012 if response.startswith(b":01") else 0.021
        s.emit([(sent + turnaround, response)])
    s.event(s.wire_end + 0.3, "close")
    note = (
        "Modbus ASCII master/slave exchange at 9600 7E1: a Delta DTB4824 temperature controller "
        "(address 1, a real device's frames from pyhys/minimalmodbus tests, Apache-2.0) and a slave 17 "
        "(frames from pymodbus-dev/pymodbus tests, BSD-3-Clause). The polling session is arranged "
        "from those frames; timing synthesised. Usable with mode=respond."
    )
    return s.text(header("2026-11-30T09:00:00.000000Z", "/dev/ttyUSB0", 9600, note, parity="E", bytesize=7))


AT_SESSION: Sequence[tuple[bytes, bytes, float]] = (
    # (command, reply, modem's processing delay) — echo is on until ATE0
    (b"AT\r", b"AT\r\r\nOK\r\n", 0.004),
    (b"ATE0\r", b"ATE0\r\r\nOK\r\n", 0.004),
    (b"ATI\r", b"\r\nQuectel\r\nEC25\r\nRevision: EC25EFAR06A06M4G\r\n\r\nOK\r\n", 0.006),
    (b"AT+CPIN?\r", b"\r\n+CPIN: READY\r\n\r\nOK\r\n", 0.008),
    (b"AT+CSQ\r", b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n", 0.005),
    (b"AT+CREG?\r", b"\r\n+CREG: 0,1\r\n\r\nOK\r\n", 0.005),
    (b"AT+COPS?\r", b'\r\n+COPS: 0,0,"Vodafone.de",7\r\n\r\nOK\r\n', 0.031),
    (b"AT+CGSN\r", b"\r\n490154203237518\r\n\r\nOK\r\n", 0.006),
    (b"AT+CGDCONT?\r", b'\r\n+CGDCONT: 1,"IP","internet","0.0.0.0",0,0,0,0\r\n\r\nOK\r\n', 0.012),
    (b"AT+CMEE=2\r", b"\r\nOK\r\n", 0.004),
    (b"AT+QBOGUS\r", b"\r\nERROR\r\n", 0.004),
    (b"AT+CPIN=1234\r", b"\r\n+CME ERROR: operation not allowed\r\n", 0.009),
)


def at_modem() -> str:
    """A synthetic but realistic AT session with a Quectel EC25 LTE module (for mode=respond)."""
    s = Session(baud=115200)
    s.event(0.0, "open")
    t = 0.300
    for command, reply, delay in AT_SESSION:
        sent = s.tx(t, command)
        s.emit([(sent + delay, reply)])
        t = max(s.wire_end, t) + 0.450
    s.event(s.wire_end + 0.3, "close")
    note = (
        "SYNTHETIC: a hand-written AT command session in the style of a Quectel EC25 LTE module "
        "(echo on until ATE0, ATI, SIM, signal, registration, operator, IMEI, PDP context, errors). "
        "Not recorded from a device. Made for replay mode=respond."
    )
    return s.text(header("2026-11-30T09:30:00.000000Z", "/dev/ttyUSB2", 115200, note))


SAMPLES = {
    "gps-quectel-l76k.jsonl": gps_quectel,
    "gps-gpsdf-bad-checksums.jsonl": gps_gpsdf,
    "esp32-boot.jsonl": esp32_boot,
    "uboot-mt7622.jsonl": uboot_mt7622,
    "modbus-ascii-delta.jsonl": modbus_ascii,
}
MAX_SAMPLE_BYTES = 150_000


def build(data: Path) -> dict[str, str]:
    """Every sample's file text, validated by the capture parser."""
    out = {name: make(data) for name, make in SAMPLES.items()}
    out["at-modem-session.jsonl"] = at_modem()
    for name, text in out.items():
        parse_capture(text.split("\n"))
        size = len(text.encode("utf-8"))
        if size >= MAX_SAMPLE_BYTES:
            raise SystemExit(f"{name} is {size} bytes; samples must stay below {MAX_SAMPLE_BYTES}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--data", type=Path, default=ROOT / "tests" / "data", help="the real data set (tests/data)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "captures", help="where to write the samples")
    parser.add_argument("--check", action="store_true", help="only verify the files are up to date")
    args = parser.parse_args(argv)
    samples = build(args.data)
    stale = []
    for name, text in samples.items():
        path = args.out / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(name)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
    for name, text in samples.items():
        state = "up to date" if name not in stale else "stale" if args.check else "written"
        print(f"{name:34} {len(text.encode()):>7} B  {state}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
