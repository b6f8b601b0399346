"""labgrid:// against a real labgrid lab (tests/lab/conftest.py): acquire, reach, power-cycle, release,
two agents racing, a coordinator that is not there, an exporter that restarts under a connection."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serial_mcp.api import SyncEngine
from serial_mcp.errors import ErrorCode, SerialMcpError
from tests.lab.conftest import BIN, BOOT_LOG, LAST_GASP, PLACE, Lab, free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.threads_outlive_the_test(
        "grpc's poller thread lives for the process; _lab_sessions_end checks ours"
    ),
]

ROOT = Path(__file__).resolve().parents[2]
ME = "agent-host/agent-a"


@pytest.fixture
def me(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LG_HOSTNAME", "agent-host")
    monkeypatch.setenv("LG_USERNAME", "agent-a")
    return ME


@pytest.fixture
def eng(lab: Lab, me: str) -> Iterator[SyncEngine]:
    with SyncEngine(labgrid_coordinator=lab.address) as engine:
        yield engine


def test_open_transacts_and_close_releases_the_place(lab: Lab, eng: SyncEngine) -> None:
    assert "acquired: None" in lab.show()
    conn = eng.open(f"labgrid://{PLACE}")
    assert f"acquired: {ME}" in lab.show()  # the coordinator itself says who holds it

    reply = conn.transact("AT\r", match="OK", timeout_ms=10000)
    assert reply.read.matched and "OK" in reply.read.data

    listed = {p.name: p for p in eng.list_ports().ports}
    place = listed[f"labgrid://{PLACE}"]
    assert place.kind == "labgrid" and place.open_as == conn.id
    assert place.lab is not None and place.lab.acquired_by == ME
    assert place.lab.tags == {"board": "demo"} and place.lab.comment == "the demo board"
    assert place.lab.host == "lab1"

    conn.close()
    assert "acquired: None" in lab.show()


def test_capture_boot_power_cycle_captures_the_boot_from_its_first_byte(lab: Lab, eng: SyncEngine) -> None:
    conn = eng.open(f"labgrid://{PLACE}")
    conn.transact("AT\r", match="OK", timeout_ms=10000)  # the board is up and talking before the cycle

    boot = conn.capture_boot(reset={"power": "cycle", "off_ms": 500}, match="login: ", timeout_ms=15000)

    assert boot.read.matched
    assert boot.read.data == BOOT_LOG.decode()  # from its very first byte, and nothing before it
    # the dying board's last words arrived, and stayed before the mark: unread, in the default cursor's way
    assert boot.bytes_before_mark >= len(LAST_GASP)
    unread = conn.read(timeout_ms=0)
    assert unread.data.endswith((LAST_GASP + BOOT_LOG).decode())
    assert lab.board.boots == 1
    assert lab.relay.requests[-2:] == ["/relay/0/0", "/relay/0/1"]  # through labgrid's simplerest driver
    conn.close()


def test_capture_boot_pulses_the_reset_line_and_captures_the_boot(lab: Lab, eng: SyncEngine) -> None:
    conn = eng.open(f"labgrid://{PLACE}")
    boot = conn.capture_boot(
        reset={"digital_output": "reset", "hold_ms": 200}, match="login: ", timeout_ms=15000
    )
    assert boot.read.matched and boot.read.data == BOOT_LOG.decode()
    assert [r for r in lab.relay.requests if r.startswith("PUT")] == ["PUT /reset 1", "PUT /reset 0"]
    with pytest.raises(SerialMcpError) as unknown:
        conn.capture_boot(reset={"digital_output": "rst"}, timeout_ms=0)
    assert (
        unknown.value.code == ErrorCode.NOT_SUPPORTED and "HttpDigitalOutput reset" in unknown.value.message
    )
    conn.close()


class Agent:
    """A serial-mcp engine in its own process (tests/lab/agent.py), with its own labgrid identity."""

    def __init__(self, lab: Lab, user: str) -> None:
        env = {**lab.env, "LG_COORDINATOR": lab.address, "LG_USERNAME": user, "LG_HOSTNAME": "agent-host"}
        env["PYTHONPATH"] = str(ROOT)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.lab.agent"],
            cwd=ROOT,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the agent ended (exit {self.proc.poll()})"
        return dict(json.loads(line))

    def ask(self, command: str) -> dict[str, Any]:
        self.send(command)
        return self.answer()

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def test_two_agents_race_for_one_place_exactly_one_wins(lab: Lab) -> None:
    alice, bob = Agent(lab, "alice"), Agent(lab, "bob")
    try:
        for agent in (alice, bob):  # both ask at once: the coordinator decides
            agent.send(f"open labgrid://{PLACE}")
        answers = {"alice": alice.answer(), "bob": bob.answer()}
        winners = [name for name, a in answers.items() if a.get("ok")]
        assert len(winners) == 1, answers
        winner, loser = (alice, bob) if winners == ["alice"] else (bob, alice)
        lost = answers["bob" if winner is alice else "alice"]
        assert lost["code"] == "port_busy"
        assert f"agent-host/{winners[0]}" in lost["message"]  # names the holder
        assert "since" in lost["message"] and "labgrid-client" in lost["message"]  # and how to release

        assert winner.ask("transact")["ok"]
        assert winner.ask("close") == {"ok": True}
        assert loser.ask(f"open labgrid://{PLACE}") == {"ok": True}
        assert "OK" in loser.ask("transact")["text"]
        assert loser.ask("close") == {"ok": True}
    finally:
        alice.stop()
        bob.stop()
    assert "acquired: None" in lab.show()


def test_a_place_held_by_a_stopped_agent_stays_locked_until_labgrid_client_releases_it(
    lab: Lab, eng: SyncEngine
) -> None:
    gone = lab.client("-p", PLACE, "acquire", user="crashed-agent")  # what a server that died leaves
    assert gone.returncode == 0, gone.stderr
    with pytest.raises(SerialMcpError) as busy:
        eng.open(f"labgrid://{PLACE}")
    assert busy.value.code == ErrorCode.PORT_BUSY
    assert "admin-host/crashed-agent" in busy.value.message and ME in busy.value.message
    assert f"-p {PLACE} release --kick" in busy.value.message
    kicked = lab.client("-p", PLACE, "release", "--kick")
    assert kicked.returncode == 0, kicked.stderr
    eng.open(f"labgrid://{PLACE}").close()


def test_an_unknown_place_names_the_places_there_are(lab: Lab, eng: SyncEngine) -> None:
    with pytest.raises(SerialMcpError) as missing:
        eng.open("labgrid://bord")
    assert missing.value.code == ErrorCode.PORT_NOT_FOUND
    assert "'board'" in missing.value.message  # did you mean


def test_a_coordinator_that_is_down_is_unavailable_naming_its_address(me: str) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    with SyncEngine(labgrid_coordinator=address) as engine:
        with pytest.raises(SerialMcpError) as down:
            engine.open(f"labgrid://{PLACE}")
        assert down.value.code == ErrorCode.UNAVAILABLE and address in down.value.message
        listed = engine.list_ports()  # discovery says so too, and still lists the local ports
        assert listed.lab_error is not None and address in listed.lab_error


def test_a_coordinator_that_never_answers_is_unavailable_within_the_bound(me: str) -> None:
    with socket.socket() as mute:  # accepts TCP, never speaks gRPC
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        address = f"127.0.0.1:{mute.getsockname()[1]}"
        with SyncEngine(labgrid_coordinator=address) as engine, pytest.raises(SerialMcpError) as silent:
            engine.open(f"labgrid://{PLACE}")
        assert silent.value.code == ErrorCode.UNAVAILABLE and address in silent.value.message


def test_send_power_cycle_from_the_command_line(lab: Lab) -> None:
    env = {**lab.env, "LG_USERNAME": "cli", "LG_HOSTNAME": "agent-host", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            str(BIN / "serial-mcp"),
            "--labgrid-coordinator",
            lab.address,
            "send",
            f"labgrid://{PLACE}",
            "--power-cycle",
            "--off-ms",
            "300",
            "--expect",
            "login: ",
            "--timeout-ms",
            "15000",
        ],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == BOOT_LOG
    assert lab.board.boots == 1 and "acquired: None" in lab.show()


def test_the_exporter_restarting_under_a_connection_is_survived_by_asking_the_coordinator_again(
    lab: Lab, eng: SyncEngine
) -> None:
    conn = eng.open(
        f"labgrid://{PLACE}", reconnect={"max_attempts": 60, "initial_delay_ms": 200, "max_delay_ms": 1000}
    )
    first = conn.transact("AT\r", match="OK", timeout_ms=10000)
    before = conn.get_status().end_offset
    old_port = _serial_port(lab)
    reconnected = threading.Event()
    connection = eng.engine.services.manager.get(conn.id)
    connection.add_listener(lambda event, data: reconnected.set() if event.type == "reconnect" else None)

    lab.stop_exporter()  # its ser2net goes with it: the connection sees the far end close
    lab.start_exporter()  # its ser2net starts once the coordinator hands it the place again: a new port
    assert reconnected.wait(60), connection.last_error  # a bound on lack of progress, not a timing

    again = conn.transact("AT\r", match="OK", timeout_ms=30000)
    status = conn.get_status()
    assert again.read.matched and status.reconnects >= 1
    assert _serial_port(lab) != old_port  # reached where the coordinator says it is now
    assert again.read.from_offset >= first.read.next_offset and status.end_offset > before  # offsets go on
    conn.close()
    assert "acquired: None" in lab.show()


def _serial_port(lab: Lab) -> int:
    """The TCP port the coordinator lists for the board's ser2net now."""
    text = lab.show()
    at = text.index("'cls': 'NetworkSerialPort'")
    port_at = text.index("'port': ", at)
    return int(text[port_at + len("'port': ") :].split(",", 1)[0].split("}", 1)[0])


def test_place_names_and_resources_are_checked_before_the_coordinator_is_asked(me: str) -> None:
    with SyncEngine(labgrid_coordinator=f"127.0.0.1:{free_port()}") as engine:
        for bad in (
            "labgrid://user@board",
            "labgrid://board:20408",
            "labgrid://board?x=1",
            "labgrid://a/b/c",
            "labgrid://",
        ):
            with pytest.raises(SerialMcpError) as refused:
                engine.open(bad)
            assert refused.value.code == ErrorCode.INVALID_ARGUMENT, bad
    assert os.environ.get("LG_USERNAME") == "agent-a"


def test_the_mcp_door_lists_places_and_completes_their_names(lab: Lab, me: str) -> None:
    import anyio
    import mcp_types as types
    from mcp import Client

    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.manager import ConnectionManager
    from serial_mcp.serial.policy import PortPolicy, policy_opener
    from tests.tool_calls import call

    async def go() -> None:
        opener = policy_opener(PortPolicy(labgrid_coordinator=lab.address), lambda: [])
        server = build_server(ConnectionManager(opener), port_lister=lambda: [])
        async with Client(server) as c:
            listed = await call(c, "list_ports", {})
            place = next(p for p in listed["ports"] if p["name"] == f"labgrid://{PLACE}")
            assert place["kind"] == "labgrid" and place["lab"]["acquired_by"] is None
            ref = types.PromptReference(type="ref/prompt", name="diagnose_port")
            comp = await c.complete(ref, {"name": "port", "value": "labgrid://b"})
            assert comp.completion.values == [f"labgrid://{PLACE}"]
            opened = await call(c, "open", {"port": f"labgrid://{PLACE}"})
            assert f"acquired: {ME}" in lab.show()
            await call(c, "close", {"connection_id": opened["connection_id"]})

    anyio.run(go)
    assert "acquired: None" in lab.show()
