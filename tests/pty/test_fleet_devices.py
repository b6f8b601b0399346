"""The identify fleet (tests/pty/fleet.py), device by device, through serial-mcp's Python API: each shows its
fingerprint (a talking one unasked, at its real pace; a silent one says nothing until it answers ``\\r``, ``AT``
or a Modbus read as the real thing does), and ``received()`` holds exactly the bytes the host sent.

The QEMU devices (U-Boot, Linux, the Cortex-M "Zephyr" board) and the whole fleet are ``slow`` and ``serial``
(a boot under TCG); a device whose tools are missing skips with the reason (``fleet.missing``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from serial_mcp import Engine, SyncEngine
from serial_mcp.api import SyncConnection
from serial_mcp.core import checksums
from tests.pty import fleet as fleet_module
from tests.pty.fleet import NAMES, TIMINGS, FleetDevice, fleet, missing

SKIP_PREFIX = "FLEET DEVICE NOT TESTED"
QUIET_MS = 600  # a silent device says nothing in this long (an unasked byte would fail the test)
REPLY_MS = 10_000  # bound on a reply on a loaded machine, not a performance claim
SLOW_QEMU = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(600)]


def _needs(name: str) -> None:
    if (why := missing(name)) is not None:
        pytest.skip(f"{SKIP_PREFIX}: {name}: {why}")


@pytest.fixture
def one(request: pytest.FixtureRequest) -> Iterator[tuple[FleetDevice, SyncConnection]]:
    """The device named by the test's parameter, opened through SyncEngine."""
    name: str = request.param
    _needs(name)
    with fleet({name}) as devices, SyncEngine() as eng:
        dev = devices[name]
        conn = eng.open(dev.port, protocol="modbus_rtu") if name == "modbus" else eng.open(dev.port)
        try:
            yield dev, conn
        finally:
            conn.close()


def _silent(dev: FleetDevice, conn: SyncConnection) -> None:
    heard = conn.read(timeout_ms=QUIET_MS, idle_ms=QUIET_MS)
    assert heard.data == "", f"{dev.name} spoke unasked: {heard.data!r}"
    assert dev.received() == b""


def _answers(conn: SyncConnection, send: str, prompt: str) -> str:
    r = conn.transact(send, match=prompt, timeout_ms=REPLY_MS)
    assert r.read.matched, (send, r.read.data)
    return str(r.read.data)


def _nmea_valid(line: str) -> bool:
    body, _, tail = line.lstrip("$").partition("*")
    crc = 0
    for ch in body.encode():
        crc ^= ch
    return tail[:2].upper() == f"{crc:02X}"


@pytest.mark.slow
@pytest.mark.parametrize("one", ["nmea"], indirect=True)
def test_the_gps_sends_real_sentences_once_a_second(one: tuple[FleetDevice, SyncConnection]) -> None:
    dev, conn = one
    assert (dev.kind, dev.talks) == ("nmea_gps", True)
    heard = conn.read(timeout_ms=3500, idle_ms=3500)
    lines = [ln for ln in str(heard.data).splitlines() if ln.startswith("$")]
    rmc = [ln for ln in lines if ln.startswith("$GNRMC")]
    assert 2 <= len(rmc) <= 5, rmc  # one fix a second
    assert sum(map(_nmea_valid, lines)) >= len(lines) - 2  # whole sentences (the first and last may be cut)
    assert dev.received() == b""


@pytest.mark.slow
@pytest.mark.parametrize("one", ["ublox"], indirect=True)
def test_the_ublox_receiver_sends_ubx_epochs_once_a_second(one: tuple[FleetDevice, SyncConnection]) -> None:
    dev, conn = one
    assert (dev.kind, dev.talks) == ("ublox", True)
    heard = bytes.fromhex(str(conn.read(timeout_ms=3500, idle_ms=3500, encoding="hex").data))
    nav_pvt = heard.count(b"\xb5\x62\x01\x07")
    # each epoch: NAV-PVT, -POSECEF, -VELECEF, -SAT, -DOP, -TIMEGPS, -EOE (the window may cut the last one)
    assert 2 <= nav_pvt <= 5 and heard.count(b"\xb5\x62") >= 7 * (nav_pvt - 1), heard[:64].hex()
    assert dev.received() == b""


@pytest.mark.parametrize("one", ["esp32"], indirect=True)
def test_the_esp32_log_is_its_app_running(one: tuple[FleetDevice, SyncConnection]) -> None:
    dev, conn = one
    assert (dev.kind, dev.talks) == ("esp_idf_app", True)
    heard = str(conn.read(timeout_ms=1500, idle_ms=1500).data)  # identify's default listening time
    assert re.search(r"(?m)^(\x1b\[0;3\dm)?[IWED] \(\d+\) [\w-]+: ", heard), heard[:300]
    assert dev.received() == b""


@pytest.mark.slow
@pytest.mark.parametrize("one", ["avr"], indirect=True)
def test_the_avr_sketch_prints_a_reading_a_second(one: tuple[FleetDevice, SyncConnection]) -> None:
    dev, conn = one
    assert (dev.kind, dev.talks) == ("text_stream", True)
    heard = str(conn.read(timeout_ms=3500, idle_ms=3500).data)
    readings = re.findall(r"t=\d+s temperature=\d+\.\dC light=\d+\r\n", heard)
    assert 2 <= len(readings) <= 5, heard
    conn.write("?\r")  # the sketch reads nothing: the byte is only recorded
    assert dev.received_wait(b"?\r", REPLY_MS / 1000), dev.received()  # the relay thread records it


@pytest.mark.slow
@pytest.mark.parametrize("one", ["modbus"], indirect=True)
def test_the_modbus_slave_is_silent_and_answers_a_holding_register_read(
    one: tuple[FleetDevice, SyncConnection],
) -> None:
    dev, conn = one
    assert (dev.kind, dev.talks) == ("modbus_rtu", False)
    _silent(dev, conn)
    r = conn.transact("010300000003", encoding="hex", timeout_ms=REPLY_MS)
    (frame,) = r.read.frames or []
    assert frame.checksum_valid is True and (frame.parsed or {})["registers"] == [100, 101, 102]
    request = bytes.fromhex("010300000003")
    crc = checksums.compute("crc16_modbus", request)
    assert dev.received() == request + crc.to_bytes(2, "little")


# The silent devices that answer at a prompt: (name, kind, [(send, prompt, what the reply holds)]); each
# says nothing for QUIET_MS, then answers every line as the real thing does, and received() is exactly
# what was sent.
PROMPTED = [
    ("modem", "at_modem", [("AT\r", "OK", "\r\nOK"), ("AT+CSQ\r", "OK", "+CSQ: 23,99")]),
    ("micropython", "micropython", [("\r", ">>> ", "\r\n>>> "), ("6*7\r", ">>> ", "42")]),
    pytest.param(
        "uboot", "uboot", [("\r", "=> ", "\r\n=> "), ("version\r", "=> ", "U-Boot 20")], marks=SLOW_QEMU
    ),
    pytest.param("linux", "linux_login", [("\r", "login: ", "board login: ")], marks=SLOW_QEMU),
    pytest.param(
        "zephyr",
        "zephyr",
        [
            ("\r", "uart:~$ ", "\r\nuart:~$ "),
            ("kernel version\r", "uart:~$ ", "Zephyr version 3.7.0"),
            ("nope\r", "uart:~$ ", "nope: command not found"),
        ],
        marks=SLOW_QEMU,
    ),
]


@pytest.mark.parametrize(("one", "kind", "exchanges"), PROMPTED, indirect=["one"])
def test_a_silent_device_answers_at_its_prompt_as_the_real_thing_does(
    one: tuple[FleetDevice, SyncConnection], kind: str, exchanges: list[tuple[str, str, str]]
) -> None:
    dev, conn = one
    assert (dev.kind, dev.talks) == (kind, False)
    _silent(dev, conn)
    for send, prompt, holds in exchanges:
        assert holds in _answers(conn, send, prompt), (send, holds)
    assert dev.received() == "".join(send for send, _, _ in exchanges).encode()


def test_the_fleet_names_each_device_once_and_refuses_an_unknown_one() -> None:
    assert len(set(NAMES)) == 10 and set(fleet_module.KINDS) == set(NAMES) == set(fleet_module.STARTERS)
    with pytest.raises(ValueError, match="toaster"), fleet({"toaster"}):
        pass


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.timeout(600)
@pytest.mark.anyio
async def test_the_whole_fleet_comes_up_and_only_the_talkers_talk() -> None:
    """All ten in parallel; listened to at once for 1.5 s (identify's default), nothing written."""
    absent = {n: why for n in NAMES if (why := missing(n)) is not None}
    if len(absent) == len(NAMES):
        pytest.skip(f"{SKIP_PREFIX}: no device can run here: {absent}")
    with fleet() as devices:
        timings = dict(TIMINGS)
        print(f"fleet timings (s): {timings}; missing: {absent}")
        assert set(devices) == set(NAMES) - set(absent)
        heard: dict[str, Any] = {}
        async with Engine() as eng:

            async def listen(dev: FleetDevice) -> None:
                conn = await eng.open(dev.port)
                heard[dev.name] = (await conn.read(timeout_ms=1500, idle_ms=1500)).data

            async with anyio.create_task_group() as tg:
                for dev in devices.values():
                    tg.start_soon(listen, dev)
        for name, dev in devices.items():
            assert bool(heard[name]) == dev.talks, (name, str(heard[name])[:200])
            assert dev.received() == b"", name
