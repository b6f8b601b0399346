"""``replay://FILE.jsonl?mode=timed|instant|respond&speed=X&loop=BOOL``: a capture file played as a port.

- **timed** (default): each rx event becomes readable at its recorded ``t`` / ``speed`` after open.
- **instant**: every rx byte is readable at once.
- **respond**: the capture is a script. The rx run after each recorded tx is held until the host
  writes; then it plays with its recorded delays (/ ``speed``) measured from that write. A write
  that differs from the recorded tx is kept in ``mismatches`` and the reply plays anyway.
- End of the recording: the port goes quiet, or starts over with ``loop=true``.

Reads wait on a condition variable (with a timeout only until the next event is due), so an idle
replay costs no CPU and ``interrupt``, ``write`` and ``close`` wake a blocked read at once.
"""

from __future__ import annotations

import difflib
import errno
import math
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import takewhile
from pathlib import Path
from typing import Any, Final, Literal

from serial_mcp import messages
from serial_mcp.core.capture import Capture, CaptureError, decode_lines, parse_capture
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import AccessError, ErrorCode, InvalidArgument, PortError
from serial_mcp.serial.replay_files import (
    ReplayScope,
    not_read,
    read_capture_bytes,
    real_path,
    replay_candidates,
)
from serial_mcp.serial.write_tail import WriteTail

ReplayMode = Literal["timed", "instant", "respond"]
MODES: Final[tuple[ReplayMode, ...]] = ("timed", "instant", "respond")
SCHEME: Final = "replay://"
MAX_SPEED: Final = 1_000_000.0
DEFAULT_MAX_FILE_BYTES: Final = 64 * 1024 * 1024
MISMATCHES_KEPT: Final = 100  # the list keeps the first ones; ``mismatch_count`` counts them all
CALLS_KEPT: Final = 1024  # ``calls`` keeps the last ones (a replay may serve for weeks)
_MAX_CHUNK: Final = 65536
_OPTIONS: Final = ("mode", "speed", "loop")
_TRUE: Final = frozenset({"", "1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})
_MAX_LISTED: Final = 10


@dataclass(frozen=True, slots=True)
class ReplaySpec:
    """A parsed ``replay://`` URL: the file as written, and how to play it."""

    path: str
    mode: ReplayMode = "timed"
    speed: float = 1.0
    loop: bool = False


def parse_replay_url(url: str) -> ReplaySpec:
    """Split ``replay://<path>?mode=..&speed=..&loop=..``; the path is percent-decoded and taken
    verbatim otherwise (``replay:///abs/x.jsonl`` is absolute, ``replay://x.jsonl`` relative)."""

    def bad(problem: str) -> InvalidArgument:
        return InvalidArgument(messages.REPLAY_BAD_URL.format(url=url, problem=problem))

    if url[: len(SCHEME)].lower() != SCHEME:
        raise bad(f"it does not start with {SCHEME}")
    raw_path, _, query = url[len(SCHEME) :].partition("?")
    path = urllib.parse.unquote(raw_path)
    if not path.strip():
        raise bad(messages.REPLAY_NO_PATH)
    seen: dict[str, str] = {}
    for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        name = key.strip().lower()
        if name not in _OPTIONS:
            close = difflib.get_close_matches(name, _OPTIONS, n=1)
            hint = messages.DID_YOU_MEAN.format(name=close[0]) if close else ""
            raise bad(messages.REPLAY_UNKNOWN_OPTION.format(key=key, hint=hint))
        if name in seen:
            raise bad(messages.REPLAY_DUPLICATE_OPTION.format(key=name))
        seen[name] = value.strip()
    mode = seen.get("mode", "timed").lower()
    if mode not in MODES:
        raise bad(messages.REPLAY_BAD_MODE.format(value=seen["mode"]))
    speed = 1.0
    if "speed" in seen:
        try:
            speed = float(seen["speed"])
        except ValueError:
            speed = math.nan
        if not (math.isfinite(speed) and 0 < speed <= MAX_SPEED):
            raise bad(messages.REPLAY_BAD_SPEED.format(value=seen["speed"], max=f"{MAX_SPEED:g}"))
    loop_text = seen.get("loop", "false").lower()
    if loop_text not in _TRUE | _FALSE:
        raise bad(messages.REPLAY_BAD_LOOP.format(value=seen["loop"]))
    return ReplaySpec(path=path, mode=mode, speed=speed, loop=loop_text in _TRUE)


@dataclass(frozen=True, slots=True)
class ReplayMismatch:
    """A host write that differs from the recording (respond mode). ``expected`` is empty when the
    host wrote after the recording's last tx; ``index`` counts recorded tx blocks from 0."""

    index: int
    expected: bytes
    actual: bytes
    recorded_t: float | None

    def describe(self, port: str) -> str:
        """One log line for status and logs."""
        expected = repr(self.expected) if self.expected else "nothing (the recording has ended)"
        return messages.REPLAY_MISMATCH.format(
            port=port, actual=repr(self.actual), expected=expected, index=self.index
        )


@dataclass(frozen=True, slots=True)
class _Segment:
    """One unit of the script: the tx that releases it (None: released at the start of a pass) and
    the rx that follows, timed relative to ``anchor_t`` (the recorded t of that tx)."""

    expect: bytes | None
    anchor_t: float
    rx: tuple[tuple[float, bytes], ...]
    recorded_t: float | None = None


def build_script(capture: Capture, mode: ReplayMode) -> list[_Segment]:
    """The segments to play. timed/instant: one segment holding every rx. respond: the rx before the
    first tx, then one segment per recorded tx (consecutive tx with no rx between form one block)."""
    lead: list[tuple[float, bytes]] = []
    if mode != "respond":
        lead = [(e.t, e.data) for e in capture.events if e.type == "rx" and e.data]
        return [_Segment(None, 0.0, tuple(lead))]
    blocks: list[tuple[bytearray, float, float, list[tuple[float, bytes]]]] = []
    for e in capture.events:
        if not e.data:
            continue
        if e.type == "tx":
            if blocks and not blocks[-1][3]:
                expect, first_t, _, rx = blocks[-1]
                blocks[-1] = (expect + e.data, first_t, e.t, rx)
            else:
                blocks.append((bytearray(e.data), e.t, e.t, []))
        elif e.type == "rx":
            (blocks[-1][3] if blocks else lead).append((e.t, e.data))
    script = [_Segment(None, 0.0, tuple(lead))]
    script += [_Segment(bytes(exp), last_t, tuple(rx), first_t) for exp, first_t, last_t, rx in blocks]
    return script


class ReplayPortHandle:
    """A ``PortHandle`` that plays a parsed capture. Thread-safe; the last calls are recorded in
    ``calls``; of the host's writes ``write_tail`` keeps a bounded tail (``written``, ``writes``)
    and counts them all.

    ``finished`` is set once a full pass of the recording has been delivered by ``read_chunk``
    (with ``loop`` the replay then starts over; ``passes`` counts delivered passes).
    """

    def __init__(
        self,
        name: str,
        capture: Capture,
        spec: ReplaySpec,
        settings: SerialSettings | None = None,
    ) -> None:
        self.name = name
        self.capture = capture
        self.spec = spec
        self.settings = settings or SerialSettings()
        self.script = build_script(capture, spec.mode)
        self.finished = threading.Event()
        self.passes = 0
        self.mismatches: list[ReplayMismatch] = []
        self.mismatch_count = 0
        self.on_mismatch: Callable[[ReplayMismatch], None] | None = None
        self.write_tail = WriteTail()
        self.written, self.writes = self.write_tail.written, self.write_tail.writes  # bounded, in place
        self.calls: list[tuple[str, Any]] = []
        self.closed = False
        self._clock = time.monotonic
        self._cond = threading.Condition()
        self._queue: deque[tuple[float, bytes, bool]] = deque()  # (due, bytes, last of its pass)
        self._interrupted = False
        self._next = 0  # index of the first segment not yet released
        self._inbuf = bytearray()  # respond: host bytes not yet matched against a recorded tx
        self._last_due = -math.inf
        self._has_rx = any(seg.rx for seg in self.script)
        self._respond = spec.mode == "respond" and len(self.script) > 1
        self._period = capture.duration / spec.speed if spec.mode == "timed" else 0.0
        with self._cond:
            self._start_pass(self._clock())

    # --- the script -------------------------------------------------------------------------------

    def _start_pass(self, base: float) -> None:
        self._pass_base = base
        self._next = 0
        self._release(self.script[0], base)

    def _release(self, segment: _Segment, anchor: float) -> None:
        """Schedule ``segment``'s rx relative to ``anchor`` (in order, never before earlier ones)."""
        for t, data in segment.rx:
            due = anchor if self.spec.mode == "instant" else anchor + (t - segment.anchor_t) / self.spec.speed
            due = max(due, self._last_due)
            self._last_due = due
            self._queue.append((due, data, False))
        self._next += 1
        if self._next >= len(self.script):  # the whole pass is scheduled: flag its last bytes
            if self._queue:
                due, data, _ = self._queue[-1]
                self._queue[-1] = (due, data, True)
            else:
                self._pass_delivered()
        self._cond.notify_all()

    def _pass_delivered(self) -> None:
        self.passes += 1
        self.finished.set()

    def _all_released(self) -> bool:
        return self._next >= len(self.script)

    def _maybe_loop(self, now: float) -> bool:
        """Start the next pass when looping and the current one is fully scheduled and drained."""
        if not (self.spec.loop and self._has_rx and self._all_released() and not self._queue):
            return False
        base = self._pass_base + self._period if self.spec.mode == "timed" else now
        self._start_pass(base)
        return True

    # --- PortHandle ---------------------------------------------------------------------------------

    def read_chunk(self) -> bytes:
        """Block until recorded bytes are due; ``b""`` after ``interrupt`` or ``close``."""
        return self.read_due(None)

    def read_due(self, timeout: float | None) -> bytes:
        """``read_chunk`` with a limit: ``b""`` also when nothing is due within ``timeout`` seconds
        (0: only what is due now). For callers with read timeouts, such as the pyserial handler."""
        with self._cond:
            if self.closed:
                raise OSError(errno.EBADF, messages.REPLAY_CLOSED.format(port=self.name))
            deadline = None if timeout is None else self._clock() + max(timeout, 0.0)
            while True:
                if self._interrupted:
                    self._interrupted = False
                    return b""
                if self._closed_now():  # close() ran while we waited
                    return b""
                now = self._clock()
                if self._queue and self._queue[0][0] <= now:
                    return self._take_due(now)
                if not self._queue and self._maybe_loop(now):
                    continue
                wait = self._queue[0][0] - now if self._queue else None
                if deadline is not None:
                    if now >= deadline:
                        return b""
                    wait = deadline - now if wait is None else min(wait, deadline - now)
                self._cond.wait(wait)

    def _closed_now(self) -> bool:
        return self.closed

    def due_bytes(self) -> int:
        """How many bytes a read would return right now (without taking them)."""
        with self._cond:
            now = self._clock()
            return sum(len(item[1]) for item in takewhile(lambda item: item[0] <= now, self._queue))

    def _take_due(self, now: float) -> bytes:
        parts: list[bytes] = []
        size = 0
        while self._queue and self._queue[0][0] <= now and (not parts or size < _MAX_CHUNK):
            _, data, last = self._queue.popleft()
            parts.append(data)
            size += len(data)
            if last:
                self._pass_delivered()
        return b"".join(parts)

    def interrupt(self) -> None:
        with self._cond:
            self._interrupted = True
            self._cond.notify_all()

    def write(self, data: bytes) -> int:
        """Accept the bytes; in respond mode, match them against the recorded tx and release the reply."""
        found: ReplayMismatch | None = None
        with self._cond:
            if self.closed:
                raise OSError(errno.EBADF, messages.REPLAY_CLOSED.format(port=self.name))
            data = bytes(data)
            self.write_tail.keep(data)
            if self._respond and data:
                found = self._match(data, self._clock())
        if found is not None and self.on_mismatch is not None:
            self.on_mismatch(found)
        return len(data)

    def _call(self, name: str, value: Any) -> None:
        self.calls.append((name, value))
        if len(self.calls) > 2 * CALLS_KEPT:
            del self.calls[: len(self.calls) - CALLS_KEPT]

    def _match(self, data: bytes, now: float) -> ReplayMismatch | None:
        """Host bytes accumulate while they are a strict prefix of the recorded tx; then the whole
        accumulated write is compared (equal or not) and the recorded reply is released."""
        self._inbuf += data
        if self._all_released() and self.spec.loop:
            self._start_pass(max(now, self._last_due))
        if self._all_released():
            return self._record(len(self.script) - 1, b"", self._take_inbuf(), None)
        segment = self.script[self._next]
        expect = segment.expect or b""
        if len(self._inbuf) < len(expect) and expect.startswith(self._inbuf):
            return None
        actual = self._take_inbuf()
        found = None if actual == expect else self._record(self._next - 1, expect, actual, segment.recorded_t)
        self._release(segment, now)
        return found

    def _take_inbuf(self) -> bytes:
        actual = bytes(self._inbuf)
        self._inbuf.clear()
        return actual

    def _record(self, index: int, expected: bytes, actual: bytes, recorded_t: float | None) -> ReplayMismatch:
        mismatch = ReplayMismatch(index, expected, actual, recorded_t)
        self.mismatch_count += 1
        if len(self.mismatches) < MISMATCHES_KEPT:
            self.mismatches.append(mismatch)
        return mismatch

    def reset_input(self) -> None:
        """Discard bytes that are already due (as a real driver drops its buffer); later ones still come."""
        with self._cond:
            self._call("reset_input", None)
            now = self._clock()
            while self._queue and self._queue[0][0] <= now:
                _, _, last = self._queue.popleft()
                if last:
                    self._pass_delivered()

    def _locked_call(self, what: str, value: Any) -> None:
        with self._cond:
            self._call(what, value)

    def reset_output(self) -> None:
        self._locked_call("reset_output", None)

    def apply_settings(self, settings: SerialSettings) -> None:
        with self._cond:
            self.settings = settings
            self._call("settings", settings)

    def set_dtr(self, level: bool) -> None:
        self._locked_call("dtr", level)

    def set_rts(self, level: bool) -> None:
        self._locked_call("rts", level)

    def set_break(self, level: bool) -> None:
        self._locked_call("break", level)

    def modem_lines(self) -> dict[str, bool | None]:
        """A recording holds no input-line states: all unknown."""
        return {"cts": None, "dsr": None, "ri": None, "cd": None}

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    # --- for status -----------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Progress for ``get_status`` and logs (plain JSON values)."""
        with self._cond:
            return {
                "mode": self.spec.mode,
                "speed": self.spec.speed,
                "loop": self.spec.loop,
                "position": min(self._next, len(self.script)),
                "segments": len(self.script),
                "passes": self.passes,
                "finished": self.finished.is_set(),
                "pending_bytes": sum(len(item[1]) for item in self._queue),
                "mismatch_count": self.mismatch_count,
            }


class ReplayOpener:
    """Opens ``replay://`` URLs. Relative paths are tried against the working directory, then
    ``captures_dir`` (default: ``captures/`` in the working directory at open time), then ``captures/``.

    With a ``scope`` (the server's opener), only files inside it are read: a path outside gives
    ``not_allowed`` with one message whatever is there (missing, a directory, a file), and the file
    is opened by the real path that was judged, without following a link swapped in since."""

    def __init__(
        self,
        captures_dir: Path | None = None,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        scope: ReplayScope | None = None,
    ) -> None:
        self.captures_dir = captures_dir
        self.max_file_bytes = max_file_bytes
        self.scope = scope

    def _captures_dir(self) -> Path:
        return Path.cwd() / (self.captures_dir if self.captures_dir is not None else Path("captures"))

    def resolve(self, path: str) -> Path:
        """The capture file ``path`` names (a real path when confined), or ``port_not_found``
        listing where it looked; ``not_allowed`` when confined and no candidate is in scope."""
        named: list[Path] = replay_candidates(path, self.captures_dir)
        candidates = named if self.scope is None else self._confine(path, named, self.scope)
        for candidate in candidates:
            if candidate.exists():
                if not candidate.is_file():
                    raise PortError(
                        ErrorCode.PORT_NOT_FOUND, messages.REPLAY_NOT_FILE.format(path=str(candidate))
                    )
                return candidate
        raise PortError(
            ErrorCode.PORT_NOT_FOUND,
            messages.REPLAY_NOT_FOUND.format(
                path=path, tried=", ".join(str(c) for c in candidates), available=self._available()
            )
            + not_read(named, self.scope),
        )

    @staticmethod
    def _confine(path: str, candidates: list[Path], scope: ReplayScope) -> list[Path]:
        """The real paths to try. Names pointing out of scope are dropped; a name in scope whose
        real path leaves it (a link) refuses the open unless an admitted candidate exists, so the
        answer never depends on what is outside."""
        named = [c for c in candidates if scope.covers(c)]
        admitted = list(dict.fromkeys(Path(r) for c in named if scope.admits(r := real_path(c))))
        leaves = len(admitted) < len(dict.fromkeys(real_path(c) for c in named))
        if not admitted or (leaves and not any(p.exists() for p in admitted)):
            raise AccessError(ErrorCode.NOT_ALLOWED, messages.REPLAY_REFUSED.format(path=path))
        return admitted

    def _available(self) -> str:
        try:
            scope = self.scope
            names = sorted(
                p.name
                for p in self._captures_dir().glob("*.jsonl")
                if p.is_file() and (scope is None or scope.admits(real_path(p)))
            )
        except OSError:
            return ""
        if not names:
            return ""
        shown = names[:_MAX_LISTED] + (["..."] if len(names) > _MAX_LISTED else [])
        return messages.REPLAY_AVAILABLE.format(names=", ".join(shown))

    def load(self, spec: ReplaySpec) -> Capture:
        """Resolve, size-check and parse the capture file (``capture_invalid`` names the bad line)."""
        path = self.resolve(spec.path)
        try:
            raw = read_capture_bytes(path, self.max_file_bytes, confined=self.scope is not None)
            return parse_capture(decode_lines(raw), torn_tail_ok=not raw.endswith(b"\n"))
        except CaptureError as exc:
            raise CaptureError(f"{path}: {exc.message}", exc.line) from None
        except OSError as exc:
            raise PortError(
                ErrorCode.PORT_OPEN_FAILED, messages.REPLAY_READ_FAILED.format(path=str(path), error=exc)
            ) from exc

    def open(self, port: str, settings: SerialSettings) -> ReplayPortHandle:
        spec = parse_replay_url(port)
        return ReplayPortHandle(port, self.load(spec), spec, settings)
