"""``sim://micropython``: a MicroPython board's REPL, with the raw REPL and raw-paste protocols mpremote uses.

- Friendly REPL (``>>> ``): typed bytes are echoed; Enter runs the line (an expression's value is printed);
  Ctrl-C clears the line, Ctrl-D soft-reboots, Ctrl-A enters the raw REPL.
- Raw REPL: Ctrl-A → ``\\r\\nraw REPL; CTRL-B to exit\\r\\n>``; code, then Ctrl-D → ``OK``, stdout,
  ``\\x04``, stderr, ``\\x04``, ``>``; Ctrl-D with no code soft-reboots; Ctrl-C clears; Ctrl-B back to
  friendly.
- Raw-paste (from the raw REPL): ``\\x05A\\x01`` → ``R\\x01``, the window-size increment (2 bytes,
  little-endian) and ``\\x01`` (two windows free). The board drains each window in ``DRAIN_MS`` and then
  sends ``\\x01``; bytes beyond the credit are lost, as on a board whose buffer overflows (counted in
  ``overrun_bytes``). Ctrl-D ends the paste: ``\\x04``, then stdout ``\\x04`` stderr ``\\x04>`` (no ``OK``).
- ``sim://micropython?state=running``: ``main.py`` is running and prints a reading every ``TICK_MS``; input
  is ignored until Ctrl-C, which interrupts it (a ``KeyboardInterrupt`` traceback) and leaves the friendly
  REPL.

Scripts run on ``micropython_exec`` (a small, safe subset of Python, bounded in work, size and
time), on the board's own clock thread and not inside the host's write: the write returns at once,
the output follows when the script ends, as on a board. What the host sends meanwhile waits in the
board's input buffer, except Ctrl-C, which interrupts the script (a ``KeyboardInterrupt``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from serial_mcp.core.settings import SerialSettings
from serial_mcp.serial.fake import FakeDevice
from serial_mcp.serial.sim.micropython_exec import Result, run, traceback
from serial_mcp.serial.sim.timeline import TimedPortHandle, Timeline, sim_option, start_board

CTRL_A, CTRL_B, CTRL_C, CTRL_D, CTRL_E = 1, 2, 3, 4, 5
BANNER = (
    b"MicroPython v1.24.1 on 2024-11-29; serial-mcp simulated board with RP2040\r\n"
    b'Type "help()" for more information.\r\n'
)
PROMPT = b">>> "
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n>"
SOFT_REBOOT = b"MPY: soft reboot\r\n"
WINDOW = 32  # raw-paste window-size increment: small, so a 10-line script needs flow control
DRAIN_MS = 5  # time the board takes to consume one window
TICK_MS = 200  # main.py's reading interval in the running state
MAX_CODE = 64 * 1024
INTERRUPTED = (
    b'Traceback (most recent call last):\r\n  File "main.py", line 9, in <module>\r\nKeyboardInterrupt: \r\n'
)


class MicroPythonBoard:
    """The REPL state machine; ``__call__`` takes what the host wrote and returns the immediate reply."""

    def __init__(self, device: FakeDevice, timeline: Timeline, running: bool) -> None:
        self.device = device
        self.timeline = timeline
        self.mode = "running" if running else "friendly"
        self.overrun_bytes = 0
        self.scripts: list[str] = []  # every script the raw REPL or raw-paste ran, for tests
        self._buf = bytearray()
        self._credit = 0
        self._taken = 0  # bytes of the current window consumed
        self._ticks = 0
        self._lock = threading.Lock()
        self._typeahead = bytearray()  # what the host sent while a script ran
        self._interrupt = threading.Event()
        self._resume = "raw"  # the mode a running script returns to

    def power_off(self) -> None:
        """The port closed: a script still running stops at its next statement."""
        self._interrupt.set()

    def power_on(self) -> None:
        with self._lock:
            if self.mode == "running":
                self.timeline.after(0, self._tick)
            else:
                self.device.feed(BANNER + PROMPT)

    def _tick(self) -> None:
        with self._lock:
            if self.mode != "running":
                return
            self._ticks += 1
            self.device.feed(b"temp: %d.%d C\r\n" % (21 + self._ticks % 3, self._ticks % 10))
            self.timeline.after(TICK_MS, self._tick)

    def __call__(self, data: bytes) -> bytes | None:
        with self._lock:  # fed under the lock: a script's output can never overtake the "OK" before it
            out = self._take(data)
            if out:
                self.device.feed(out)
        return None

    def _take(self, data: bytes) -> bytes:
        out = bytearray()
        for b in data:
            if self.mode == "executing":
                if b == CTRL_C:
                    self._interrupt.set()
                elif len(self._typeahead) < MAX_CODE:
                    self._typeahead.append(b)
                else:
                    self.overrun_bytes += 1
                continue
            out += getattr(self, f"_{self.mode}")(b)
        return bytes(out)

    def _start(self, text: str, resume: str, shown: Callable[[Result], bytes]) -> None:
        """Run ``text`` on the clock thread; ``shown`` is what the board prints when it ends."""
        self.mode, self._resume = "executing", resume
        self._interrupt.clear()
        self.timeline.after(0, lambda: self._finish(text, shown))

    def _finish(self, text: str, shown: Callable[[Result], bytes]) -> None:
        result = run(text, self._interrupt.is_set)  # without the lock: the host may type, or Ctrl-C
        with self._lock:
            self.mode = self._resume
            typed, self._typeahead = bytes(self._typeahead), bytearray()
            self.device.feed(shown(result) + self._take(typed))

    # --- states: each takes one byte and returns what the board prints at once ---

    def _running(self, b: int) -> bytes:
        if b != CTRL_C:
            return b""
        self.mode = "friendly"
        return INTERRUPTED + BANNER + PROMPT

    def _friendly(self, b: int) -> bytes:
        if b == CTRL_A:
            self._enter_raw()
            return b"\r\n" + RAW_BANNER
        if b == CTRL_B:
            self._buf.clear()
            return b"\r\n" + BANNER + PROMPT
        if b == CTRL_C:
            self._buf.clear()
            return b"\r\n" + PROMPT
        if b == CTRL_D:
            self._buf.clear()
            return b"\r\n" + SOFT_REBOOT + BANNER + PROMPT
        if b == 0x0D:
            line, self._buf = bytes(self._buf), bytearray()
            text = line.decode("utf-8", "replace")
            if not text.strip():
                return b"\r\n" + PROMPT
            self._start(text, "friendly", _shown_at_prompt)
            return b"\r\n"
        if b in (0x08, 0x7F):
            if not self._buf:
                return b""
            self._buf.pop()
            return b"\x08 \x08"
        if b == 0x0A or len(self._buf) >= MAX_CODE:
            return b""
        self._buf.append(b)
        return bytes([b])

    def _enter_raw(self) -> None:
        self.mode = "raw"
        self._buf.clear()

    def _raw(self, b: int) -> bytes:
        if b == CTRL_A:
            self._enter_raw()
            return b"\r\n" + RAW_BANNER
        if b == CTRL_B:
            self.mode = "friendly"
            self._buf.clear()
            return b"\r\n" + BANNER + PROMPT
        if b == CTRL_C:
            self._buf.clear()
            return b""
        if b == CTRL_D:
            if not self._buf:
                return b"\r\n" + SOFT_REBOOT + RAW_BANNER
            code, self._buf = bytes(self._buf), bytearray()
            self._execute(code)
            return b"OK"
        if b == CTRL_E and not self._buf:
            self.mode = "paste_request"
            return b""
        if len(self._buf) < MAX_CODE:
            self._buf.append(b)
        return b""

    def _paste_request(self, b: int) -> bytes:
        self._buf.append(b)
        if len(self._buf) < 2:
            return b""
        request, self._buf = bytes(self._buf), bytearray()
        if request != b"A\x01":
            self.mode = "raw"
            return b"R\x00"
        self.mode = "paste"
        self._credit, self._taken = 2 * WINDOW, 0
        return b"R\x01" + WINDOW.to_bytes(2, "little") + b"\x01"

    def _paste(self, b: int) -> bytes:
        if b in (CTRL_C, CTRL_D):
            code, self._buf = bytes(self._buf), bytearray()
            self.mode = "raw"
            if b == CTRL_C:
                return b"\x04\x04" + traceback("KeyboardInterrupt", "", 1).encode() + b"\x04>"
            self._execute(code)
            return b"\x04"
        if self._credit == 0:
            self.overrun_bytes += 1  # the host ignored the flow control: the board's buffer overflowed
            return b""
        self._credit -= 1
        self._taken += 1
        if len(self._buf) < MAX_CODE:
            self._buf.append(b)
        if self._taken == WINDOW:
            self._taken = 0
            self.timeline.after(DRAIN_MS, self._window_drained)
        return b""

    def _window_drained(self) -> None:
        with self._lock:
            if self.mode == "paste":
                self._credit += WINDOW
                self.device.feed(b"\x01")

    def _execute(self, code: bytes) -> None:
        """Run a raw-REPL script: stdout ``\\x04`` stderr ``\\x04>`` when it ends."""
        text = code.decode("utf-8", "replace")
        self.scripts.append(text)
        self._start(text, "raw", _shown_raw)


def _shown_raw(result: Result) -> bytes:
    return result.stdout.encode() + b"\x04" + result.stderr.encode() + b"\x04>"


def _shown_at_prompt(result: Result) -> bytes:
    shown = result.stdout + result.stderr
    if not result.stderr and result.value is not None:
        shown += repr(result.value) + "\r\n"
    return shown.encode() + PROMPT


def running_of(port: str) -> bool:
    return sim_option(port, "state", "repl", "repl|running", ("repl", "running").__contains__) == "running"


class BoardPortHandle(TimedPortHandle):
    """The board's port: closing it also stops a script that is still running."""

    def __init__(self, board: MicroPythonBoard, settings: SerialSettings) -> None:
        super().__init__(board.device, settings, board.timeline)
        self.board = board

    def close(self) -> None:
        self.board.power_off()
        super().close()


def open_micropython(port: str, settings: SerialSettings) -> TimedPortHandle:
    running = running_of(port)
    return BoardPortHandle(start_board(port, lambda d, t: MicroPythonBoard(d, t, running)), settings)
