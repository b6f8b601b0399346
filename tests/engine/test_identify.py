"""Issue 39: ``identify`` listens first, pokes only when asked, answers every port, and keeps its word
about what it sent. Devices are the in-memory fakes (every byte written and every line change is
recorded); the kinds themselves are tested on real output in tests/unit/test_port_kinds.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import pytest
from mcp import Client

from serial_mcp.core.baud import simulate_garble
from serial_mcp.core.port_info import PortInfo
from serial_mcp.core.settings import SerialSettings
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener, FakePortHandle
from serial_mcp.serial.manager import ConnectionManager
from tests.tool_calls import call, error

pytestmark = pytest.mark.anyio
UBOOT = b"\r\nU-Boot 2023.01 (Jan 01 2023)\r\n\r\nDRAM:  128 MiB\r\nHit any key to stop autoboot:  0 \r\n=> "
USB = PortInfo(
    name="ttyUSB0", description="CP2102", hwid=None, vid="10c4", pid="ea60", serial_number="0001",
    manufacturer="Silicon Labs", product="CP2102 USB to UART", interface=None, location=None, transport="usb",
)  # fmt: skip


def serve(opener: FakeOpener, ports: list[PortInfo] | None = None, read_only: bool = False) -> Client:
    manager = ConnectionManager(opener)
    return Client(build_server(manager, port_lister=lambda: list(ports or []), read_only=read_only))


async def call_text(c: Client, args: dict[str, object]) -> str:
    r = await c.call_tool("identify", args)
    assert not r.is_error, r.content
    return "".join(getattr(part, "text", "") for part in r.content)


def at_modem(dev: FakeDevice) -> Callable[[bytes], bytes | None]:
    def answer(data: bytes) -> bytes | None:
        return b"AT\r\r\nOK\r\n" if data.startswith(b"AT") else None

    return answer


async def test_listening_writes_nothing_and_touches_no_line() -> None:
    opener = FakeOpener()
    board, modem, quiet = opener.add("board"), opener.add("modem"), opener.add("quiet")
    board.feed(UBOOT)
    modem.responder = at_modem(modem)
    async with serve(opener) as c:
        r = await call(c, "identify", {"ports": ["board", "modem", "quiet"], "listen_ms": 300})
    kinds = {a["port"]: a.get("kind") for a in r["ports"]}
    assert kinds["board"] == "uboot" and kinds["quiet"] == "silent"
    assert kinds["modem"] in ("silent", "unknown")  # a modem says nothing unasked: never a guess
    for dev in (board, modem, quiet):
        assert bytes(dev.written) == b"" and dev.line_events == []
    assert all(not a.get("sent") for a in r["ports"])


async def test_probe_sends_only_listed_bytes_and_finds_the_modem() -> None:
    opener = FakeOpener()
    modem = opener.add("modem")
    modem.responder = at_modem(modem)
    async with serve(opener) as c:
        r = await call(c, "identify", {"ports": ["modem"], "listen_ms": 200, "probe": True})
    (answer,) = r["ports"]
    assert answer["kind"] == "at_modem" and answer["open"]["protocol"] == "at_command"
    listed = b"".join(s.encode().decode("unicode_escape").encode("latin-1") for s in answer["sent"])
    assert listed == bytes(modem.written)  # every byte sent is listed, and nothing else was sent


async def test_a_missing_or_refused_port_is_that_ports_answer() -> None:
    opener = FakeOpener()
    opener.add("board").feed(UBOOT)
    async with serve(opener) as c:
        r = await call(c, "identify", {"ports": ["board", "nothere"], "listen_ms": 200})
    by_port = {a["port"]: a for a in r["ports"]}
    assert by_port["board"]["kind"] == "uboot"
    assert by_port["nothere"]["error"] == "port_not_found" and by_port["nothere"]["kind"] is None


async def test_read_only_refuses_probe_before_any_port_is_touched_and_listening_still_works() -> None:
    opener = FakeOpener()
    modem = opener.add("modem")
    modem.responder = at_modem(modem)
    async with serve(opener, read_only=True) as c:
        refused = await error(c, "identify", {"ports": ["modem"], "listen_ms": 200, "probe": True})
        assert modem.opens == 0
        listened = await call(c, "identify", {"ports": ["modem"], "listen_ms": 100})
    assert refused["code"] == "read_only_mode" and "probe" in refused["message"]
    assert bytes(modem.written) == b"" and listened["ports"][0]["kind"] == "silent"


async def test_what_identify_heard_is_still_there_for_the_next_read() -> None:
    opener = FakeOpener()
    opener.add("board").feed(UBOOT)
    async with serve(opener) as c:
        r = await call(c, "identify", {"ports": ["board"], "listen_ms": 200})
        cid = r["ports"][0]["connection_id"]
        got = await call(c, "read", {"connection_id": cid, "timeout_ms": 0})
    assert got["data"].encode() == UBOOT.replace(b"\r\n", b"\r\n")


async def test_sixteen_ports_are_judged_at_once_not_one_after_another() -> None:
    """Every open waits at a barrier for all sixteen: a serial identify would time out on it."""
    opener = FakeOpener()
    names = [f"p{i}" for i in range(16)]
    for name in names:
        opener.add(name).feed(UBOOT)
    barrier = threading.Barrier(16, timeout=10)
    real_open = opener.open

    def open_together(port: str, settings: SerialSettings) -> FakePortHandle:
        barrier.wait()
        return real_open(port, settings)

    opener.open = open_together  # type: ignore[method-assign]
    async with serve(opener) as c:
        r = await call(c, "identify", {"ports": names, "listen_ms": 200})
        too_many = await error(c, "identify", {"ports": [*names, "p16"]})
    assert [a["kind"] for a in r["ports"]] == ["uboot"] * 16
    assert too_many["code"] == "invalid_argument"


async def test_a_uart_at_the_wrong_rate_is_swept_on_the_open_descriptor_and_restored() -> None:
    opener = FakeOpener()
    dev = opener.add("ttyUSB0")
    stop = threading.Event()
    text = b"I (1234) wifi: connected to ap, rssi -52\r\n"

    def stream() -> None:  # a board logging at 57600, heard at whatever rate the port is set to
        while not stop.wait(0.02):
            if dev.settings_history:
                dev.feed(simulate_garble(text, 57600, dev.settings_history[-1].baud_rate))

    feeder = threading.Thread(target=stream, daemon=True)
    feeder.start()
    try:
        async with serve(opener, [replace(USB)]) as c:
            r = await call(c, "identify", {"ports": ["ttyUSB0"], "listen_ms": 300})
    finally:
        stop.set()
        feeder.join()
    (answer,) = r["ports"]
    assert answer["baud_rate"] == 57600 and answer["open"]["baud_rate"] == 57600
    assert {s.baud_rate for s in dev.settings_history[1:-1]} >= {9600, 230400}  # tried on the open port
    assert dev.settings_history[-1].baud_rate == 57600  # the port identify holds is left as the answer says
    assert dev.opens == 1  # never a close and reopen per rate
    assert answer["resets_on_open"] is True and answer["usb"].startswith("10c4:ea60")


async def test_each_port_is_one_short_line() -> None:
    opener = FakeOpener()
    for i in range(4):
        opener.add(f"/dev/pts/{i + 90}-a-very-long-name-to-push-the-line" * 2).feed(UBOOT)
    async with serve(opener) as c:
        names = [f"/dev/pts/{i + 90}-a-very-long-name-to-push-the-line" * 2 for i in range(4)]
        text = await call_text(c, {"ports": names, "listen_ms": 200})
    *lines, footer = text.splitlines()  # a line a port, then what "held" means, once
    assert len(lines) == 4 and all(len(line.encode()) <= 300 for line in lines)
    assert all(": uboot (high)" in line and "; held c" in line for line in lines)
    assert footer == "held: closes after 60 s idle; open(port) adopts it"


async def test_no_usb_port_and_none_named_says_what_to_name() -> None:
    async with serve(FakeOpener()) as c:
        text = await call_text(c, {})
    assert "PTYs" in text


async def test_the_python_api_identifies_as_the_tool_does() -> None:
    from serial_mcp.api import Engine

    opener = FakeOpener()
    opener.add("board").feed(UBOOT)
    async with Engine(opener=opener, port_lister=list) as eng:
        result = await eng.identify(ports=["board"], listen_ms=200)
        (answer,) = result.ports
        assert answer.kind == "uboot" and answer.prompt == "=> " and answer.sent == []
        assert eng.connections().connections[0].connection_id == answer.connection_id


async def test_what_is_heard_is_judged_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge reads up to 64 KiB of frames and patterns: a flooding device must not hold the loop."""
    from serial_mcp.core.port_kinds import judge_heard
    from serial_mcp.engine import identify_ops

    loop_thread = threading.get_ident()
    threads: list[int] = []

    def judging(heard: bytes, quiet_ms: float) -> object:
        threads.append(threading.get_ident())
        return judge_heard(heard, quiet_ms)

    monkeypatch.setattr(identify_ops, "judge_heard", judging)
    opener = FakeOpener()
    flood = opener.add("flood")
    flood.feed(b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n" * 4000)
    async with serve(opener) as c:
        r = await call(c, "identify", {"ports": ["flood"], "listen_ms": 300})
    assert r["ports"][0]["kind"] == "nmea_gps"
    assert threads and loop_thread not in threads


async def test_the_call_the_answer_gives_works_on_the_port_identify_holds() -> None:
    """The text says how to talk to the port: copied as it is, that call must work (identify holds the
    port open, so it is the one-call form, not an open that the held connection would refuse)."""
    gga = b"$GNGGA,055234.200,4739.71890,N,12219.58362,W,1,14,0.9,76.5,M,-17.6,M,,*4F\r\n"
    opener = FakeOpener()
    opener.add("gps").feed(gga * 5)
    async with serve(opener) as c:
        text = await call_text(c, {"ports": ["gps"], "listen_ms": 200})
        assert 'ask transact/read(port="gps", protocol="nmea0183")' in text, text
        r = await call(c, "read", {"port": "gps", "protocol": "nmea0183", "timeout_ms": 0})
    assert r["frames"] and r["frames"][0]["checksum_valid"] and r["frames"][0]["parsed"]["sentence"] == "GGA"
