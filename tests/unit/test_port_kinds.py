"""Issue 39 item 1: what is on a port, judged from bytes alone (``serial_mcp.core.port_kinds``), on real output.

Every row is a real capture from ``tests/data`` (see its SOURCES.md): QEMU U-Boot and Linux sessions, the
OpenWrt boot logs, the ESP32 boot log with its watchdog reset, gpsd's NMEA and u-blox logs, MicroPython's unix
port on a pty (``identify/micropython-unix-pokes.jsonl``, with its replies to ``\\r``, Ctrl-C, Ctrl-B, Ctrl-A),
Zephyr consoles pasted in public threads (``identify/zephyr-consoles.json``), pymodbus-built Modbus replies and
the repository's Modbus RTU vectors, and the modem simulator's AT replies. Also: garbage is never a specific kind,
no prefix of a real sample is a wrong kind, and no poke is offered while a boot runs or without its evidence.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.ansi import strip_ansi
from serial_mcp.core.baud import simulate_garble
from serial_mcp.core.framing.modbus_rtu import modbus_rtu_encode
from serial_mcp.core.port_kinds import (
    GENERIC_KINDS,
    KINDS,
    MODBUS_POKES,
    Poke,
    Verdict,
    judge_heard,
    judge_reply,
    pokes_for,
)
from serial_mcp.core.port_kinds_table import ROWS
from serial_mcp.core.presets import PRESETS
from serial_mcp.core.settings import PARITIES
from serial_mcp.engine.options import OpenOptions
from serial_mcp.serial.sim.esp32_rom import DOWNLOAD, ROM_BANNER
from serial_mcp.serial.sim.modem import ModemResponder

DATA = Path(__file__).resolve().parents[1] / "data"
SILENCE = 5000.0  # quiet_ms of a port that has said all it will


def _session(name: str, writes: int | None = None) -> bytes:
    """What a recorded session's device said, up to its ``writes``-th write (None: all of it)."""
    rx = bytearray()
    seen = 0
    for line in (DATA / name).read_text().splitlines():
        row = json.loads(line)
        if "tx" in row:
            seen += 1
            if writes is not None and seen > writes:
                break
        else:
            rx += bytes.fromhex(row["rx"])
    return bytes(rx)


def _replies(name: str) -> dict[bytes, bytes]:
    """Each write of a recorded session and what the device said after it."""
    out: dict[bytes, bytes] = {}
    last: bytes | None = None
    for line in (DATA / name).read_text().splitlines():
        row = json.loads(line)
        if "tx" in row:
            last = bytes.fromhex(row["tx"])
            out[last] = b""
        elif last is not None:
            out[last] += bytes.fromhex(row["rx"])
    return out


def _gpsd(path: str) -> bytes:
    """A gpsd test log without its leading ``#`` comment lines (they are gpsd's notes, not device output)."""
    data = (DATA / path).read_bytes()
    while data.startswith(b"#"):
        data = data[data.index(b"\n") + 1 :]
    return data


def _zephyr(name: str) -> bytes:
    """A pasted Zephyr console as the UART sends it: lines ending in CRLF (Zephyr's console adds the CR)."""
    examples = json.loads((DATA / "identify/zephyr-consoles.json").read_text())["examples"]
    lines: list[str] = next(e["lines"] for e in examples if e["name"] == name)
    return "\r\n".join(lines).encode()


def _cut_after(data: bytes, marker: bytes) -> bytes:
    """``data`` up to the end of the line holding ``marker``."""
    at = data.index(marker)
    return data[: data.index(b"\n", at) + 1]


MDF = (DATA / "bootlogs/esp32/esp32-mdf-boot.txt").read_bytes()
SYSRQ = (DATA / "crashes/linux-sysrq-panic.txt").read_bytes()
C3 = (DATA / "crashes/esp32c3-panics.txt").read_bytes()
UBOOT = "sessions/uboot-interactive.jsonl"
LINUX = "sessions/linux-interactive.jsonl"
MICROPYTHON = "identify/micropython-unix-pokes.jsonl"
MP_REPLIES = _replies(MICROPYTHON)


@dataclass(frozen=True)
class Heard:
    name: str
    data: Callable[[], bytes]
    quiet_ms: float
    kind: str
    prompt: str | None = None
    open: tuple[tuple[str, object], ...] = ()
    hold_off: bool = False
    settled: bool = True
    pokes: tuple[str, ...] = ()


HEARD = [
    Heard("uboot_countdown", lambda: _session(UBOOT, 0), 400, "uboot", "=> ", hold_off=True, settled=False),
    Heard(
        "uboot_countdown_openwrt",
        lambda: _cut_after(_covr(), b"Hit any key"),
        900,
        "uboot",
        "=> ",
        (),
        True,
        False,
    ),
    Heard(
        "uboot_bootmenu", lambda: _cut_after(_covr(), b"Press UP/DOWN"), 900, "uboot", "=> ", (), True, False
    ),
    Heard("uboot_prompt", lambda: _session(UBOOT), SILENCE, "uboot", "=> "),
    Heard(
        "uboot_abort_prompt",
        lambda: (DATA / "crashes/uboot-synchronous-abort.txt").read_bytes(),
        SILENCE,
        "uboot",
        "=> ",
    ),
    Heard("uboot_booting", lambda: _cut_after(_covr(), b"U-Boot SPL"), 20, "uboot", None, (), True, False),
    # a byte before U-Boot's countdown still stops autoboot: its lines hold off for seconds, not 300 ms
    Heard(
        "uboot_init", lambda: _cut_after(_session(UBOOT, 0), b"Flash:"), 1500, "uboot", None, (), True, False
    ),
    Heard(
        "uboot_hung",
        lambda: _cut_after(_session(UBOOT, 0), b"Flash:"),
        SILENCE,
        "uboot",
        None,
        (),
        False,
        False,
        ("cr",),
    ),
    Heard("linux_login", lambda: _session(LINUX, 0), SILENCE, "linux_login", "login: "),
    Heard("linux_login_after_panic", lambda: SYSRQ, SILENCE, "linux_login", "login: "),
    Heard("linux_login_then_kernel", lambda: _m32_lines(1276), 100, "linux_login", "login:"),
    Heard("linux_login_kernel_on_its_line", lambda: _m32_lines(1274), 100, "linux_login", "login:"),
    Heard("linux_shell", lambda: _session(LINUX), SILENCE, "linux_shell", "# "),
    Heard(
        "kernel_booting", lambda: _cut_after(SYSRQ, b"Run /init"), 50, "text_stream", None, (), True, False
    ),
    Heard(
        "kernel_quiet",
        lambda: _cut_after(SYSRQ, b"Run /init"),
        SILENCE,
        "text_stream",
        settled=False,
        pokes=("cr", "at"),
    ),
    Heard("micropython_repl", lambda: _session(MICROPYTHON, 0), SILENCE, "micropython", ">>> "),
    Heard(
        "micropython_tracebacks",
        lambda: (DATA / "crashes/micropython-unix-tracebacks.txt").read_bytes(),
        900,
        "micropython",
        ">>> ",
    ),
    Heard(
        "micropython_raw_repl",
        lambda: MP_REPLIES[b"\x01"],
        SILENCE,
        "micropython",
        ">",
        settled=False,
        pokes=("micropython_interrupt", "micropython_banner"),
    ),
    Heard("esp32_app", lambda: MDF, SILENCE, "esp_idf_app"),
    Heard("esp32_monitor_app", lambda: (DATA / "esp_idf_monitor/in1.txt").read_bytes(), 100, "esp_idf_app"),
    Heard(
        "esp32_rom_booting", lambda: _cut_after(MDF, b"entry 0x"), 10, "esp_rom", hold_off=True, settled=False
    ),
    Heard("esp32_rom_stuck", lambda: _cut_after(MDF, b"entry 0x"), SILENCE, "esp_rom"),
    Heard("esp32c3_rom", lambda: _cut_after(C3, b"entry 0x"), SILENCE, "esp_rom"),
    Heard("esp32_download", lambda: ROM_BANNER + b"rst:0x1 (POWERON_RESET)," + DOWNLOAD, 10, "esp_rom"),
    Heard("zephyr_shell", lambda: _zephyr("shell_uname_3_5"), SILENCE, "zephyr", "uart:~$"),
    Heard("zephyr_custom_prompt", lambda: _zephyr("custom_prompt_3_7"), SILENCE, "zephyr"),
    Heard(
        "zephyr_legacy", lambda: _zephyr("legacy_shell_1_12"), SILENCE, "zephyr", settled=False, pokes=("cr",)
    ),
    Heard("zephyr_app", lambda: _zephyr("microros_2_2"), SILENCE, "zephyr", settled=False, pokes=("cr",)),
    Heard(
        "zephyr_booting", lambda: _zephyr("hello_world_3_5")[:40], 5, "zephyr", hold_off=True, settled=False
    ),
    Heard(
        "nmea_quectel",
        lambda: _gpsd("nmea/quectel-l76k-nmea.log"),
        300,
        "nmea_gps",
        open=(("protocol", "nmea0183"),),
    ),
    Heard(
        "nmea_garmin", lambda: _gpsd("nmea/garmin48.log"), 300, "nmea_gps", open=(("protocol", "nmea0183"),)
    ),
    Heard("nmea_mtk", lambda: _gpsd("nmea/mtk-3301.log"), 300, "nmea_gps", open=(("protocol", "nmea0183"),)),
    Heard(
        "nmea_bad_sums", lambda: _gpsd("nmea/gpsdf.log"), 300, "nmea_gps", open=(("protocol", "nmea0183"),)
    ),
    Heard("ublox_m8n", lambda: _gpsd("gnss/ublox-neo-m8n.log"), 300, "ublox", open=(("protocol", "gnss"),)),
    Heard(
        "ublox_f9p", lambda: _gpsd("gnss/ublox-zed-f9p-rtk.log"), 300, "ublox", open=(("protocol", "gnss"),)
    ),
    Heard("ublox_m8t", lambda: _gpsd("gnss/u-blox-m8t-time.log"), 300, "ublox", open=(("protocol", "gnss"),)),
    Heard("ublox_rtcm", lambda: _gpsd("gnss/ublox-f9p-rtcm.log"), 300, "ublox", open=(("protocol", "gnss"),)),
    Heard(
        "rtcm3_only", lambda: _gpsd("gnss/rtcm3.2.log"), 300, "binary_stream", open=(("protocol", "gnss"),)
    ),
    Heard(
        "modem_urc",
        lambda: b"\r\nRING\r\n\r\nRING\r\n",
        SILENCE,
        "at_modem",
        None,
        (("protocol", "at_command"),),
        False,
        False,
        ("at",),
    ),
    Heard(
        "modem_sim_greeting",
        lambda: b"\r\nSIM MODEM READY\r\n",
        SILENCE,
        "text_stream",
        settled=False,
        pokes=("cr", "at"),
    ),
    Heard(
        "openwrt_running",
        lambda: (DATA / "bootlogs/openwrt-MR6350/BootLog_no_MACs.txt").read_bytes(),
        SILENCE,
        "text_stream",
        settled=False,
        pokes=("cr", "at"),
    ),
    Heard("silent", lambda: b"", SILENCE, "silent", settled=False, pokes=("cr", "at") + ("modbus",) * 12),
    Heard(
        "few_bytes",
        lambda: b"\x00\xff",
        SILENCE,
        "unknown",
        settled=False,
        pokes=("cr", "at") + ("modbus",) * 12,
    ),
    Heard("garbled", lambda: simulate_garble(MDF[:4000], 115200, 460800), SILENCE, "unknown", settled=False),
]


def _m32_lines(count: int) -> bytes:
    """The OpenWrt M32 boot log's first ``count`` lines: its login prompt (line 1274) has kernel messages after
    it, the first on the prompt's own line."""
    return b"".join(
        (DATA / "bootlogs/openwrt-M32/Bootlog.txt").read_bytes().splitlines(keepends=True)[:count]
    )


def _covr() -> bytes:
    return (DATA / "bootlogs/openwrt-COVR-X1860/Bootlog.txt").read_bytes()


@pytest.mark.parametrize("row", HEARD, ids=lambda r: r.name)
def test_judge_heard_on_real_output(row: Heard) -> None:
    heard = row.data()
    verdict = judge_heard(heard, row.quiet_ms)
    assert verdict.kind == row.kind, verdict
    assert verdict.prompt == row.prompt, verdict
    assert dict(verdict.open) == dict(row.open), verdict
    assert (verdict.hold_off is not None) == row.hold_off, verdict
    assert verdict.settled == row.settled, verdict
    assert tuple(p.name for p in pokes_for(verdict, heard)) == row.pokes
    _check_verdict(verdict)
    if verdict.kind not in GENERIC_KINDS and verdict.kind != "silent":
        assert verdict.confidence in ("high", "medium")


def _check_verdict(verdict: Verdict) -> None:
    """Evidence is short and printable; ``open`` holds only real ``open`` arguments with valid values."""
    assert verdict.kind in KINDS
    assert len(verdict.evidence) <= 48 and verdict.evidence.isprintable(), verdict.evidence
    assert (verdict.evidence == "") == (verdict.kind == "silent")
    fields = set(OpenOptions.__dataclass_fields__)
    assert set(verdict.open) <= fields - {"port", "baud_rate"}, verdict.open
    if "protocol" in verdict.open:
        assert verdict.open["protocol"] in PRESETS
    if "parity" in verdict.open:
        assert verdict.open["parity"] in PARITIES


def test_every_kind_is_judged_somewhere() -> None:
    """Each kind of the fixed list is what some real sample or reply gives (modbus_rtu: only a reply)."""
    assert KINDS == (
        "uboot", "linux_login", "linux_shell", "micropython", "at_modem", "nmea_gps", "ublox", "modbus_rtu",
        "esp_rom", "esp_idf_app", "zephyr", "text_stream", "binary_stream", "silent", "unknown",
    )  # fmt: skip
    judged = {row.kind for row in HEARD} | {row.kind for row in REPLIES}
    assert judged == set(KINDS)
    assert {row.kind for row in ROWS if row.kind} <= judged


def test_every_row_matches_a_real_line() -> None:
    """Each fingerprint row matches some line of the real samples (a row nothing real matches is a guess)."""
    text = strip_ansi(b"\n".join(_all_samples()))[0]
    lines = [line.strip(b"\r").decode("utf-8", "replace") for line in text.split(b"\n")]
    unmatched = {row.name for row in ROWS} - {
        row.name for row in ROWS for line in lines if row.pattern.search(line)
    }
    # rows whose real text the samples above do not hold, each with where it is real
    known = {
        "login_bare": "busybox getty without a hostname",
        "shell_path": "busybox ash's '/ # '",
        "shell_bare": "a shell with PS1='# '",
        "shell_bracket": "Fedora's and RHEL's '[user@host dir]# '",
        "micropython_soft_reboot": "MicroPython's soft reset line (the rp2 port since 1.20; sim://micropython)",
    }
    assert unmatched <= set(known), unmatched - set(known)


# --- replies to pokes ---------------------------------------------------------------------------------------

_MODBUS_1 = MODBUS_POKES[0]  # slave 1, 9600 8E1
_SILENT = Verdict("silent", "high", "", {}, settled=False)


def _pymodbus_reply(device: int, exception: bool = False) -> bytes:
    """A slave's reply to our read, built by pymodbus's own RTU framer (the oracle for its CRC)."""
    pymodbus = pytest.importorskip("pymodbus")
    del pymodbus
    from pymodbus.framer import FramerRTU
    from pymodbus.pdu import DecodePDU, ExceptionResponse
    from pymodbus.pdu.register_message import ReadHoldingRegistersResponse

    framer = FramerRTU(DecodePDU(False))
    if exception:
        return bytes(framer.buildFrame(ExceptionResponse(3, 2, device_id=device)))
    return bytes(framer.buildFrame(ReadHoldingRegistersResponse(registers=[0x1234], dev_id=device)))


@dataclass(frozen=True)
class Reply:
    name: str
    poke: Poke
    reply: Callable[[], bytes]
    before: Verdict
    kind: str
    confidence: str | None = None
    evidence: str | None = None
    open: tuple[tuple[str, object], ...] | None = None


def _modem(*commands: bytes, reply_to_last: bool = False) -> bytes:
    """The modem simulator's reply to the last of ``commands`` (to all of them unless ``reply_to_last``)."""
    modem = ModemResponder()
    replies = [modem(c) or b"" for c in commands]
    return replies[-1] if reply_to_last else b"".join(replies)


def _poke(name: str) -> Poke:
    pokes = {p.name: p for p in pokes_for(_SILENT, b"")}
    pokes.update(
        {p.name: p for p in pokes_for(judge_heard(MP_REPLIES[b"\x01"], SILENCE), MP_REPLIES[b"\x01"])}
    )
    return pokes[name]


_TEXT = Verdict("text_stream", "medium", "x", {}, settled=False)
_UBOOT_BANNER = Verdict("uboot", "high", "U-Boot 2023.01", {}, settled=False)
_MP_BANNER = Verdict("micropython", "high", "MicroPython", {}, ">>> ", settled=False)
_MODBUS_OPEN = (("protocol", "modbus_rtu"), ("data_bits", 8), ("parity", "even"), ("stop_bits", 1))

REPLIES = [
    Reply(
        "at_ok",
        _poke("at"),
        lambda: _modem(b"AT\r"),
        _SILENT,
        "at_modem",
        "high",
        "AT -> OK",
        (("protocol", "at_command"),),
    ),
    Reply(
        "at_ok_echo",
        _poke("at"),
        lambda: _modem(b"ATE1\r", b"AT\r", reply_to_last=True),
        _TEXT,
        "at_modem",
        "high",
    ),
    Reply(
        "at_error_is_a_modem",
        _poke("at"),
        lambda: b"\r\nERROR\r\n",
        _SILENT,
        "at_modem",
        "high",
        "AT -> ERROR",
    ),
    Reply(
        "at_to_uboot",
        _poke("at"),
        lambda: b"AT\r\nUnknown command 'AT' - try 'help'\r\n=> ",
        _UBOOT_BANNER,
        "uboot",
        "high",
    ),
    Reply("cr_uboot", _poke("cr"), lambda: b"\r\n=> ", _UBOOT_BANNER, "uboot", "high", "=> "),
    Reply(
        "cr_login",
        _poke("cr"),
        lambda: b"\r\n\r\nboard login: ",
        _TEXT,
        "linux_login",
        "high",
        "board login: ",
    ),
    Reply("cr_shell", _poke("cr"), lambda: b"\r\nroot@board:~# \x1b[6n", _TEXT, "linux_shell", "high"),
    Reply(
        "cr_zephyr",
        _poke("cr"),
        lambda: b"\r\n\x1b[1;32muart:~$ \x1b[m",
        _SILENT,
        "zephyr",
        "high",
        "uart:~$ ",
    ),
    Reply(
        "cr_text_to_silent", _poke("cr"), lambda: b"\r\nSIM MODEM READY\r\n", _SILENT, "text_stream", "medium"
    ),
    Reply("cr_nothing", _poke("cr"), lambda: b"", _SILENT, "silent"),
    Reply("cr_echo_only", _poke("cr"), lambda: b"\r", _SILENT, "silent"),
    Reply(
        "mp_interrupt",
        _poke("micropython_interrupt"),
        lambda: MP_REPLIES[b"\x03"],
        _MP_BANNER,
        "micropython",
        "high",
        ">>> ",
    ),
    Reply(
        "mp_banner",
        _poke("micropython_banner"),
        lambda: MP_REPLIES[b"\x02"],
        _MP_BANNER,
        "micropython",
        "high",
        ">>> ",
    ),
    Reply("cr_micropython", _poke("cr"), lambda: MP_REPLIES[b"\r"], _SILENT, "micropython", "medium", ">>> "),
    Reply(
        "modbus_read",
        _MODBUS_1,
        lambda: _pymodbus_reply(1),
        _SILENT,
        "modbus_rtu",
        "high",
        "slave 1 at 9600 8E1: 01 03 02 12 34 b5 33",
        _MODBUS_OPEN,
    ),
    Reply(
        "modbus_exception",
        _MODBUS_1,
        lambda: _pymodbus_reply(1, exception=True),
        _SILENT,
        "modbus_rtu",
        "high",
        None,
        _MODBUS_OPEN,
    ),
    Reply(
        "modbus_after_echo",
        _MODBUS_1,
        lambda: _MODBUS_1.data + _pymodbus_reply(1),
        _SILENT,
        "modbus_rtu",
        "high",
    ),
    Reply("modbus_echo_only", _MODBUS_1, lambda: _MODBUS_1.data, _SILENT, "silent"),
    Reply("modbus_other_slave", _MODBUS_1, lambda: _pymodbus_reply(2), _SILENT, "silent"),
    Reply("modbus_bad_crc", _MODBUS_1, lambda: _pymodbus_reply(1)[:-1] + b"\x00", _SILENT, "silent"),
    Reply("modbus_noise", _MODBUS_1, lambda: bytes(range(1, 40)), _SILENT, "silent"),
]


@pytest.mark.parametrize("row", REPLIES, ids=lambda r: r.name)
def test_judge_reply(row: Reply) -> None:
    verdict = judge_reply(row.poke, row.reply(), row.before)
    assert verdict.kind == row.kind, verdict
    if row.confidence is not None:
        assert verdict.confidence == row.confidence, verdict
    if row.evidence is not None:
        assert verdict.evidence == row.evidence, verdict
    if row.open is not None:
        assert dict(verdict.open) == dict(row.open), verdict
    if verdict.kind == row.before.kind and row.kind == "silent":
        assert verdict is row.before  # nothing said: the verdict before, unchanged
    _check_verdict(verdict)


def test_modbus_reply_from_the_repository_vectors() -> None:
    """The RTU vectors' exception reply of slave 0x11 (pymodbus's tests) answers a read poked at slave 0x11."""
    vectors = json.loads((DATA / "modbus_ascii/modbus_ascii_vectors.json").read_text())["rtu_crc_frames"]
    frames = [bytes.fromhex(v["frame_hex"]) for v in vectors]
    poke = Poke(
        "modbus", modbus_rtu_encode(bytes([0x11, 3, 0, 0, 0, 1])), 200, {"baud_rate": 19200, "parity": "none"}
    )
    for frame in frames:
        verdict = judge_reply(poke, frame, _SILENT)
        answers = (
            frame[0] == 0x11
            and frame[1] in (3, 0x83)
            and len(frame) == (5 if frame[1] == 0x83 else 5 + frame[2])
        )
        assert (verdict.kind == "modbus_rtu") == answers, (frame.hex(), verdict)
        if answers:
            assert verdict.evidence.startswith("slave 17 at 19200 8N1: 11 ")


# --- the pokes ----------------------------------------------------------------------------------------------


def test_modbus_pokes_are_wellformed_rtu_reads() -> None:
    """Twelve reads of holding register 0 (count 1), slaves 1-3, at 9600 then 19200, 8E1 then 8N1; pymodbus's
    own RTU framer decodes each with a good CRC."""
    pytest.importorskip("pymodbus")
    from pymodbus.framer import FramerRTU
    from pymodbus.pdu import DecodePDU

    order = []
    for poke in MODBUS_POKES:
        used, pdu = FramerRTU(DecodePDU(True)).handleFrame(poke.data, 0, 0)
        assert used == len(poke.data) == 8 and pdu is not None
        assert (pdu.function_code, pdu.address, pdu.count) == (3, 0, 1)
        settings_ = dict(poke.settings)
        assert settings_["data_bits"] == 8 and settings_["stop_bits"] == 1
        order.append((settings_["baud_rate"], settings_["parity"], pdu.dev_id))
    assert order == [(r, p, s) for r in (9600, 19200) for p in ("even", "none") for s in (1, 2, 3)]


def _all_samples() -> list[bytes]:
    return [row.data() for row in HEARD] + list(MP_REPLIES.values())


def test_pokes_respect_hold_off_and_evidence() -> None:
    """No poke while a boot runs or U-Boot counts down; Ctrl-C/Ctrl-B only where MicroPython was heard; every
    poke is one of the safe few (never a reset, never a flash-loader sync)."""
    safe = {b"\r", b"AT\r", b"\x03", b"\x02"} | {p.data for p in MODBUS_POKES}
    for heard in _all_samples():
        for cut in [*range(0, 64), *range(64, len(heard) + 1, max(1, len(heard) // 24)), len(heard)]:
            for quiet in (0.0, SILENCE):
                verdict = judge_heard(heard[:cut], quiet)
                pokes = pokes_for(verdict, heard[:cut])
                if verdict.hold_off is not None or verdict.settled:
                    assert pokes == []
                assert {p.data for p in pokes} <= safe
                if any(p.data in (b"\x03", b"\x02") for p in pokes):
                    assert (
                        b"MicroPython" in heard[:cut] or b"raw REPL" in heard[:cut] or b">>>" in heard[:cut]
                    )


def test_no_poke_in_a_countdown_whatever_else_was_heard() -> None:
    """A U-Boot countdown after a MicroPython banner or modem text still gets no byte."""
    countdown = _session(UBOOT, 0)
    for before in (_session(MICROPYTHON, 0), b"\r\nRING\r\n", b""):
        verdict = judge_heard(before + countdown, 900)
        assert verdict.hold_off is not None and pokes_for(verdict, before + countdown) == []


# --- never a guess ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("true_baud", [115200, 9600])
def test_garbage_at_a_wrong_rate_is_never_a_specific_kind(true_baud: int) -> None:
    texts = [MDF[:6000], SYSRQ[:6000], _session(UBOOT), _gpsd("nmea/quectel-l76k-nmea.log")[:6000]]
    for text in texts:
        for rate in (1200, 2400, 4800, 9600, 19200, 38400, 57600, 74880, 115200, 230400, 460800, 921600):
            if rate != true_baud:
                garbled = simulate_garble(text, true_baud, rate)
                assert judge_heard(garbled, SILENCE).kind in GENERIC_KINDS, (true_baud, rate)


#: Each sample's kinds as it went along (a board boots through stages), besides the generic ones.
_STAGES: dict[str, set[str]] = {
    "linux_shell": {"linux_login", "linux_shell"},
    "esp32_app": {"esp_rom", "esp_idf_app"},
    "esp32_monitor_app": {"esp_rom", "esp_idf_app"},
    "ublox_m8n": {"ublox", "nmea_gps"},
    "ublox_f9p": {"ublox", "nmea_gps"},
    "ublox_m8t": {"ublox", "nmea_gps"},
    "ublox_rtcm": {"ublox", "nmea_gps"},
    "openwrt_running": {"uboot", "linux_login"},
}


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([row for row in HEARD if row.kind != "silent"]), st.integers(1, 400), st.floats(0, 6000)
)
def test_a_prefix_of_a_real_sample_is_never_a_wrong_kind(row: Heard, cut: int, quiet: float) -> None:
    heard = row.data()[:cut]
    kind = judge_heard(heard, quiet).kind
    assert kind in GENERIC_KINDS | {row.kind} | _STAGES.get(row.name, set()), (row.name, cut, heard)


def test_the_projects_simulators_are_told_apart() -> None:
    """What the simulators the identify bench runs say (their texts follow real devices) is judged as the
    device it simulates; the reboot board's bare ``# `` is a shell, but only medium."""
    from serial_mcp.serial.sim import micropython as mp
    from serial_mcp.serial.sim import reboot_board as board

    cases = [
        (mp.BANNER + mp.PROMPT, SILENCE, "micropython", "high", ">>> ", False),
        (mp.RAW_BANNER, SILENCE, "micropython", "high", ">", False),
        (mp.SOFT_REBOOT + mp.BANNER + mp.PROMPT, SILENCE, "micropython", "high", ">>> ", False),
        (mp.SOFT_REBOOT, 100, "micropython", "high", ">>> ", False),
        (board.BANNER + board.AUTOBOOT + b" 3 ", 800, "uboot", "high", "=> ", True),
        (
            board.BANNER + board.AUTOBOOT + b" 0 \r\n" + board.LOADER_PROMPT,
            100,
            "uboot",
            "high",
            "=> ",
            False,
        ),
        (
            board.BANNER + board.AUTOBOOT + b" 0 \r\n" + board.KERNEL_LOG,
            100,
            "text_stream",
            "medium",
            None,
            True,
        ),
        (board.BANNER + board.KERNEL_LOG + board.SHELL_PROMPT, SILENCE, "linux_shell", "medium", "# ", False),
    ]
    for heard, quiet, kind, confidence, prompt, hold in cases:
        verdict = judge_heard(heard, quiet)
        assert (verdict.kind, verdict.confidence, verdict.prompt) == (kind, confidence, prompt), heard
        assert (verdict.hold_off is not None) == hold, heard
