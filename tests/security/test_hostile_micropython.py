"""Hostile MicroPython (issue 28, items 3 and 5): a board that floods raw-paste window credit, and
scripts for ``sim://micropython`` that would hold the event loop or crash the simulator.

- A board may grant credit (``\\x01``) without end: the host reads flow-control bytes only when it
  has no credit left, checks its deadline on every turn and yields each time.
- The simulated board's integers, sequences and work are bounded like a small board's heap; a
  script that goes past them, or mixes types, gets the traceback a board prints, never
  ``internal_error``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from mcp import Client

from serial_mcp.core.settings import SerialSettings
from serial_mcp.engine import micropython_run
from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeDevice, FakeOpener, FakePortHandle
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.sim import micropython_exec as mpy
from serial_mcp.serial.sim import micropython_values as sim_values
from serial_mcp.serial.sim.micropython import BANNER, PROMPT, MicroPythonBoard
from tests.liveness import StdioServer
from tests.tool_calls import call, error

RAW_ENTERED = b"\r\n" + micropython_run.RAW_BANNER
WINDOW = 16
FLOOD_RATE_CHUNK = 4096  # bytes of credit per send ...
FLOOD_PAUSE_S = 0.02  # ... every 20 ms: ~200 kB/s, a fast USB-CDC board
FLOOD_S = 2.0  # then the board falls silent (a frozen loop would catch up afterwards, seconds late)


def script_step(code: str, **extra: Any) -> dict[str, Any]:
    return {"steps": [{"micropython": code, **extra}]}


# --- item 3: a board that floods window credit ---------------------------------------------------


class CreditFloodBoard:
    """A "MicroPython board" on a TCP port: it enters the raw REPL, accepts raw-paste with a
    16-byte window, then sends window credit (``\\x01``) at ~200 kB/s for ``FLOOD_S`` and never
    ends the paste."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.stop = threading.Event()
        self.flooded = 0
        self._thread = threading.Thread(target=self._serve, name="credit-flood-board", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            heard = b""
            while b"\x05A\x01" not in heard:
                data = conn.recv(4096)
                if not data:
                    return
                heard += data
                if b"\x05A\x01" not in heard and b"\x01" in data:
                    conn.sendall(RAW_ENTERED)
            conn.sendall(b"R\x01" + WINDOW.to_bytes(2, "little"))
            ticks = int(FLOOD_S / FLOOD_PAUSE_S)
            for _ in range(ticks):
                try:
                    conn.sendall(b"\x01" * FLOOD_RATE_CHUNK)
                except OSError:
                    return
                self.flooded += FLOOD_RATE_CHUNK
                if self.stop.wait(FLOOD_PAUSE_S):  # the board's pace, and the test's stop
                    return
            self.stop.wait()

    def close(self) -> None:
        self.stop.set()
        self._thread.join(10)
        self.server.close()


@pytest.fixture
def flood_board() -> Iterator[CreditFloodBoard]:
    board = CreditFloodBoard()
    yield board
    board.close()


def test_a_board_flooding_window_credit_never_holds_the_loop(flood_board: CreditFloodBoard) -> None:
    with StdioServer() as srv:
        cid = srv.call("open", {"port": f"socket://127.0.0.1:{flood_board.port}"})["connection_id"]
        result = srv.assert_live(
            "transact", {"connection_id": cid, **script_step("print('hi')\n" * 8, timeout_ms=1000)}
        )
        assert result.get("isError"), result  # the board never ended the paste: a clear failure
        assert result["structuredContent"]["error"]["code"] in ("timeout", "mpy_failed"), result
        assert flood_board.flooded > 0  # the attack really ran
        srv.call("close", {"connection_id": cid})


class BurstCreditBoard:
    """A fake board that answers raw-paste with 50,000 credits at once (a window's worth of
    ``\\x01`` each), then behaves: it acknowledges the end of data and prints ``hi``."""

    BURST = 50_000

    def __call__(self, data: bytes) -> bytes | None:
        if data in (b"\r\x03\x03\x01", b"\r\x01"):
            return RAW_ENTERED
        if data == b"\x05A\x01":
            return b"R\x01" + WINDOW.to_bytes(2, "little") + b"\x01" * self.BURST
        if data == b"\x04":
            return b"\x04hi\r\n\x04\x04>"
        return None


class OneByteCreditBoard:
    """A fake board with a one-byte window that grants one more byte for each byte taken: a long
    script then needs one round trip per byte."""

    def __call__(self, data: bytes) -> bytes | None:
        if data in (b"\r\x03\x03\x01", b"\r\x01"):
            return RAW_ENTERED
        if data == b"\x05A\x01":
            return b"R\x01" + (1).to_bytes(2, "little")
        if data == b"\x04":
            return b"\x04\x04\x04>"
        if data == b"\x02":
            return None
        return b"\x01" * len(data)


@pytest.fixture
async def fake_client() -> AsyncIterator[tuple[Client, FakeOpener]]:
    opener = FakeOpener()
    manager = ConnectionManager(opener)
    async with Client(build_server(manager, port_lister=list)) as c:
        yield c, opener
    await manager.close_all()


@pytest.mark.anyio
async def test_credit_is_read_only_when_the_window_is_spent(
    fake_client: tuple[Client, FakeOpener], monkeypatch: pytest.MonkeyPatch
) -> None:
    c, opener = fake_client
    opener.add("burst", BurstCreditBoard())
    takes = [0]
    real_take = micropython_run._Stream.take

    async def counting_take(self: micropython_run._Stream, n: int, cap_s: float | None = None) -> bytes:
        takes[0] += 1
        return await real_take(self, n, cap_s)

    monkeypatch.setattr(micropython_run._Stream, "take", counting_take)
    code = "print('hi')\n" * 10
    cid = (await call(c, "open", {"port": "burst"}))["connection_id"]
    r = await call(c, "transact", {"connection_id": cid, **script_step(code)})
    assert r["steps"][0]["stdout"] == "hi\r\n" and r["steps_ok"] is True
    # the reply and the window header, then one credit byte per window spent: not 50,000 reads
    assert takes[0] <= 2 + len(code) // WINDOW + 1, takes[0]


@pytest.mark.anyio
async def test_a_paste_stops_at_its_deadline(fake_client: tuple[Client, FakeOpener]) -> None:
    c, opener = fake_client
    device = opener.add("slow", OneByteCreditBoard())
    code = "x = 1\n" * 4000  # 24,000 round trips: far more than 300 ms
    cid = (await call(c, "open", {"port": "slow"}))["connection_id"]
    e = await error(c, "transact", {"connection_id": cid, **script_step(code, timeout_ms=300)})
    assert e["code"] == "timeout", e
    assert device.written.count(b"x = 1") < 4000  # it stopped sending when its time was up


# --- item 5: scripts on sim://micropython --------------------------------------------------------

SQUARINGS = "x = 2**64\n" + "x = x * x\n" * 20  # each squaring doubles the bits: 2**70 bits at the end


def test_a_doubling_bigint_script_never_holds_the_loop() -> None:
    with StdioServer() as srv:
        cid = srv.call("open", {"port": "sim://micropython"})["connection_id"]
        result = srv.assert_live(
            "transact", {"connection_id": cid, **script_step(SQUARINGS, timeout_ms=3000)}
        )
        step = result["structuredContent"]["steps"][0]
        assert step["ok"] is False and "MemoryError: memory allocation failed" in step["stderr"], step
        srv.call("close", {"connection_id": cid})


def stderr_of(source: str) -> str:
    result = mpy.run(source)
    assert result.stderr.startswith("Traceback (most recent call last):\r\n"), result
    return result.stderr


@pytest.mark.parametrize(
    ("source", "last_line"),
    [
        ('1 < "a"', "TypeError: unsupported types for __lt__: 'int', 'str'"),
        ('x = 1\nif x >= "a":\n    pass', "TypeError: unsupported types for __ge__: 'int', 'str'"),
        ('-"x"', "TypeError: unsupported type for __neg__: 'str'"),
        ('+"x"', "TypeError: unsupported type for __pos__: 'str'"),
        ("~1.5", "TypeError: unsupported type for __invert__: 'float'"),
        ('1 + "a"', "TypeError: unsupported types for __add__: 'int', 'str'"),
        ("range(2**64)", "OverflowError: overflow converting long int to machine word"),
        ("range(1.5)", "TypeError: can't convert float to int"),
        ("range(1, 5, 0)", "ValueError: zero step"),
        ("0 ** -1", "ZeroDivisionError: divide by zero"),
        ("1 << -1", "ValueError: negative shift count"),
        ("int(1e400)", "OverflowError: can't convert inf to int"),
        (SQUARINGS, "MemoryError: memory allocation failed, allocating "),
        ("2 ** 100000", "MemoryError: memory allocation failed, allocating "),
        ("1 << 10**9", "MemoryError: memory allocation failed, allocating "),
        ("round(5, -10**6)", "MemoryError: memory allocation failed, allocating "),
        ("len(b'x' * 10**6)", "MemoryError: memory allocation failed"),
    ],
)
def test_a_bad_script_gets_the_boards_traceback(source: str, last_line: str) -> None:
    line = stderr_of(source).splitlines()[-1]
    assert line.startswith(last_line), line


def test_numbers_within_the_heap_still_work() -> None:
    r = mpy.run("x = 2**64\nx = x * x\nx = x * x\nprint(len(str(x)))")
    assert r.stderr == "" and r.stdout == "78\r\n", r
    r = mpy.run("print(1 << 100, 10 ** 100 % 7, 2.0 ** 2000, (-1.5) ** 2001)")
    assert r.stderr == "" and r.stdout == f"{1 << 100} {10**100 % 7} inf -inf\r\n", r


def test_a_self_doubling_list_runs_out_of_memory_before_it_is_printed() -> None:
    line = stderr_of("a = [1]\n" + "a = [a, a]\n" * 20 + "print(a)").splitlines()[-1]
    assert line.startswith("MemoryError: memory allocation failed"), line


def test_a_script_has_a_bounded_amount_of_work() -> None:
    busy = "for i in range(5000):\n    y = " + " + ".join(["i"] * 200) + "\n"  # a million additions
    line = stderr_of(busy).splitlines()[-1]
    assert line == "RuntimeError: sim://micropython: script ran too many steps", line


def test_a_script_prints_a_bounded_amount() -> None:
    chatty = "s = 'x' * 10000\nfor i in range(5000):\n    print(s)\n"  # 50 MB of output
    result = mpy.run(chatty)
    assert result.stderr.splitlines()[-1] == "RuntimeError: sim://micropython: script printed too much"
    assert len(result.stdout) <= sim_values.MAX_PRINTED


class HandClock:
    """A board's timeline the test runs by hand: queued actions wait until ``run_next``."""

    def __init__(self) -> None:
        self.queued: list[Callable[[], None]] = []

    def after(self, ms: float, action: Callable[[], None]) -> None:
        self.queued.append(action)

    def run_next(self) -> None:
        self.queued.pop(0)()


def test_a_script_runs_on_the_boards_clock_keeps_typed_input_and_stops_at_ctrl_c() -> None:
    device, clock = FakeDevice("sim://micropython"), HandClock()
    device.responder = MicroPythonBoard(device, clock, running=False)  # type: ignore[arg-type]
    port = FakePortHandle(device, SerialSettings())
    port.write(b"\x01")
    port.write(b"for i in range(5000):\n    x = i\n\x04")
    assert port.read_chunk() == b"\r\n" + micropython_run.RAW_BANNER + b"OK"  # the write did not run it
    port.write(b"\x02")  # typed while the script runs: it waits in the board's buffer
    port.write(b"\x03")  # Ctrl-C: interrupts the script
    clock.run_next()
    interrupted = mpy.traceback("KeyboardInterrupt", "", 1).encode()
    assert port.read_chunk() == b"\x04" + interrupted + b"\x04>" + b"\r\n" + BANNER + PROMPT


@pytest.mark.anyio
async def test_a_type_error_in_a_step_is_a_traceback_not_internal_error() -> None:
    async with Client(build_server(ConnectionManager(default_opener()), port_lister=list)) as c:
        cid = (await call(c, "open", {"port": "sim://micropython"}))["connection_id"]
        for code, kind in (
            ('1 < "a"', "TypeError"),
            ("range(2**64)", "OverflowError"),
            ('-"x"', "TypeError"),
        ):
            r = await call(c, "transact", {"connection_id": cid, **script_step(code)})
            step = r["steps"][0]
            assert step["ok"] is False and f"\r\n{kind}: " in step["stderr"], step


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"timeout_ms": "abc"}, "timeout_ms"),
        ({"timeout_ms": True}, "timeout_ms"),
        ({"timeout_ms": 1.5}, "timeout_ms"),
        ({"timeout_ms": -5}, "timeout_ms"),
        ({"timeout_ms": 0}, "timeout_ms"),
        ({"interrupt": "no"}, "interrupt"),
    ],
)
async def test_a_micropython_steps_options_are_typed(extra: dict[str, Any], field: str) -> None:
    async with Client(build_server(ConnectionManager(default_opener()), port_lister=list)) as c:
        cid = (await call(c, "open", {"port": "sim://micropython"}))["connection_id"]
        e = await error(c, "transact", {"connection_id": cid, **script_step("print(1)", **extra)})
        assert e["code"] == "invalid_argument" and field in e["message"], e
        status = await call(c, "get_status", {"connection_id": cid})
        assert status["tx_bytes"] == 0  # refused before anything was sent
