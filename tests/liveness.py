"""Liveness under attack: is a real ``serial-mcp`` over stdio still answering pings while it works
on hostile input?

The event loop is shared by every session and port, so no device, frame, script or session may
hold it. ``StdioServer`` runs the server as an MCP client does (a subprocess on pipes) and
``pings_during`` sends a ``ping`` every ``PING_EVERY_S`` while one request runs, timing each
answer. ``assert_live`` is the check the hostile-input suite uses: every ping answered within
``BOUND_S`` (250 ms; the stalls it guards against were 1.9 s to 22 s).

    with StdioServer() as srv:
        srv.call("open", {"port": "loop://"})
        srv.assert_live("read", {"connection_id": "c1", "protocol": "gnss", "timeout_ms": 3000})
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.raw_rpc import INITIALIZE_PARAMS, INITIALIZED, server_env

BOUND_S = 0.25
# An answer line longer than this (a 4 MiB read: ~9 MB) is timed as it arrives and parsed later, by
# the waiter: parsing it on the reader thread (0.05-0.2 s) would make the lines behind it, pings'
# answers among them, look late by the test's own parsing time.
BIG_LINE = 1 << 20
_BIG_ANSWER = re.compile(rb'\{"jsonrpc":"2\.0","id":(\d+|"(?:[^"\\]|\\.)*"),"result":')
PING_EVERY_S = 0.05
ANSWER_TIMEOUT_S = 60.0


class _Unparsed:
    """A big answer's line, parsed when it is waited for."""

    def __init__(self, line: bytes) -> None:
        self.line = line


class StdioServer:
    """A ``python -m serial_mcp`` subprocess spoken to in raw JSON-RPC lines; answers are matched
    to requests by id on a reader thread."""

    def __init__(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close(); never a pipe: a chatty server must not block)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "serial_mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=server_env(**(env or {})),
            cwd=cwd,
        )
        self._ids = itertools.count(100)
        self._answers: dict[object, dict[str, Any] | _Unparsed] = {}
        self._arrived: dict[object, float] = {}
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, name="liveness-reader", daemon=True)
        self._reader.start()
        self.request("initialize", INITIALIZE_PARAMS)
        self._send(INITIALIZED)

    # --- plumbing --------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            arrived = time.monotonic()
            big = _BIG_ANSWER.match(line) if len(line) > BIG_LINE else None
            if big is not None:  # parsed by whoever waits for it: the lines behind it are read on time
                with self._cond:
                    rid = json.loads(big.group(1))
                    self._answers[rid] = _Unparsed(line)
                    self._arrived[rid] = arrived
                    self._cond.notify_all()
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict) or "id" not in msg or "method" in msg:
                continue  # notifications and requests of the server's own
            with self._cond:
                self._answers[msg["id"]] = msg
                self._arrived[msg["id"]] = arrived
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
            self.proc.stdin.flush()

    def send_request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting; returns its id."""
        rid = next(self._ids)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)
        return rid

    def wait(self, rid: object, timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """The answer to request ``rid`` (raises ``TimeoutError`` if none comes in ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no answer to request {rid} (server rc={self.proc.poll()})")
                self._cond.wait(left)
            answer = self._answers.pop(rid)
        return json.loads(answer.line) if isinstance(answer, _Unparsed) else answer

    def answered_at(self, rid: object) -> float | None:
        with self._cond:
            return self._arrived.get(rid)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.wait(self.send_request(method, params))

    # --- tools ---------------------------------------------------------------------------------

    def call_raw(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/call``'s ``result`` (``isError`` may be true)."""
        answer = self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool call that must succeed: its structuredContent."""
        result = self.call_raw(name, arguments)
        assert not result.get("isError"), result
        content: dict[str, Any] = result["structuredContent"]
        return content

    # --- liveness ------------------------------------------------------------------------------

    def pings_during(
        self, method: str, params: dict[str, Any], *, timeout: float = ANSWER_TIMEOUT_S
    ) -> tuple[dict[str, Any], list[float]]:
        """Send one request, then a ping every ``PING_EVERY_S`` until it is answered; returns its
        answer and every ping's round trip in seconds (a ping still unanswered when the request
        ends is waited for, so a stall cannot hide at the end)."""
        rid = self.send_request(method, params)
        pings: list[tuple[int, float]] = []
        deadline = time.monotonic() + timeout
        while self.answered_at(rid) is None:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise TimeoutError(f"{method} not answered in {timeout} s")
            pings.append((self.send_request("ping"), time.monotonic()))
            with self._cond:
                self._cond.wait_for(lambda: rid in self._answers, PING_EVERY_S)
        answer = self.wait(rid)
        trips = []
        for pid, sent in pings:
            self.wait(pid)
            arrived = self._arrived.pop(pid)
            trips.append(arrived - sent)
        return answer, trips

    def assert_live(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        bound: float = BOUND_S,
        timeout: float = ANSWER_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Call tool ``name`` while pinging: every ping must be answered within ``bound``. Returns
        the call's ``result`` (error or not) for the test to look at."""
        answer, trips = self.pings_during(
            "tools/call", {"name": name, "arguments": arguments}, timeout=timeout
        )
        worst = max(trips, default=0.0)
        late = [round(t, 3) for t in trips if t > bound]
        assert not late, (
            f"the event loop was held during {name}: {len(late)} of {len(trips)} pings answered late "
            f"(worst {worst:.3f} s, bound {bound} s): {late[:10]}"
        )
        result: dict[str, Any] = answer["result"]
        return result

    # --- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._reader.join(5)
        self._stderr.close()

    def stderr(self) -> str:
        """What the server logged so far (for a failing test's message)."""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def structured(result: dict[str, Any]) -> dict[str, Any]:
    """A successful ``tools/call`` result's structuredContent."""
    assert not result.get("isError"), result
    content: dict[str, Any] = result["structuredContent"]
    return content


def server_args(capture_dir: Path | None = None, extra: Sequence[str] = ()) -> list[str]:
    return [*(["--capture-dir", str(capture_dir)] if capture_dir is not None else []), *extra]
