"""Issue 38, precision first: events an agent can act on raise no false alarm in ordinary use.

- A reset the user caused or expected (``expect_reset``: capture_boot, a DTR/RTS change, a lend) is a
  ``reset`` event with its cause before the boot it explains, and that boot never counts toward a loop.
- A banner-like line answering the host in an interactive session (real QEMU U-Boot ``version`` and
  ``bdinfo``, Linux ``dmesg`` and ``cat /proc/version``, recorded with their writes) is no boot.
- A traceback whose REPL prompt comes back is an ``exception``; one the program does not survive is a crash.
- Labels are printable text; a boot loop fires again once a loop that had stopped starts again.
"""

from __future__ import annotations

import json
from pathlib import Path

from serial_mcp.core.events import Event, EventDetector

DATA = Path(__file__).resolve().parents[1] / "data"
SESSIONS = DATA / "sessions"
_MDF = (DATA / "bootlogs/esp32/esp32-mdf-boot.txt").read_bytes()
ESP32_BOOT = _MDF[: _MDF.index(b"ets Jun", 10)]  # the log's first boot: ROM, bootloader, app
ROM_BOOT = b"ets Jun  8 2016 00:22:57\r\n\r\nrst:0x1 (POWERON_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)\r\n"


class Stream:
    """A detector fed as a connection feeds it: bytes with their times, the host's writes noted."""

    def __init__(self, **kwargs: float) -> None:
        self.detector = EventDetector(**kwargs)  # type: ignore[arg-type]
        self.pos = 0
        self.events: list[Event] = []

    def rx(self, data: bytes, t: float) -> list[Event]:
        got = self.detector.feed(data, self.pos, t)
        self.pos += len(data)
        self.events += got
        return got

    def tx(self, t: float) -> None:
        self.detector.note_tx(self.pos, t)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events if e.kind != "stage"]


def replay(name: str) -> tuple[list[Event], bytes]:
    """A recorded session (one JSON line per chunk: ``{"t": s, "rx"|"tx": hex}``) fed with its times, its
    writes noted where they were made."""
    s = Stream()
    for line in (SESSIONS / name).read_text().splitlines():
        chunk = json.loads(line)
        if "rx" in chunk:
            s.rx(bytes.fromhex(chunk["rx"]), chunk["t"])
        else:
            s.tx(chunk["t"])
    return s.events + s.detector.flush(), b"".join(
        bytes.fromhex(c["rx"])
        for c in map(json.loads, (SESSIONS / name).read_text().splitlines())
        if "rx" in c
    )


# --- resets the user caused -----------------------------------------------------------------------------


def test_a_reset_the_user_caused_is_a_reset_with_its_cause_and_never_a_boot_loop() -> None:
    s = Stream()
    s.rx(ESP32_BOOT, 0.0)
    for i in range(1, 5):  # four capture_boot resets in 8 s: four boots, no loop
        s.detector.expect_reset("capture_boot: DTR/RTS pulse", s.pos, 2.0 * i)
        at = s.pos
        got = s.rx(ESP32_BOOT, 2.0 * i + 0.05)
        assert [(e.kind, e.line) for e in got][:2] == [
            ("reset", "capture_boot: DTR/RTS pulse"),
            ("boot", "ets Jun  8 2016 00:22:57"),
        ]
        assert got[0].offset == at and got[0].severity == "info" and got[1].detail["reset"] == got[0].line
    assert s.kinds() == ["boot"] + ["reset", "boot"] * 4
    assert s.detector.counters()["boot_loops"] == 0


def test_the_same_boots_without_a_reset_of_the_user_are_a_boot_loop() -> None:
    s = Stream()
    for i in range(3):
        s.rx(ESP32_BOOT, 2.0 * i)
    assert s.kinds() == ["boot", "boot", "boot", "boot_loop"]


def test_a_reset_explains_one_boot_within_its_window_only() -> None:
    s = Stream()
    s.rx(ROM_BOOT, 0.0)
    s.detector.expect_reset("lend", s.pos, 10.0, window=5.0)
    s.rx(ROM_BOOT, 11.0)  # the lend's
    s.rx(ROM_BOOT, 12.0)  # the firmware's own: a mark explains one boot
    s.detector.expect_reset("DTR/RTS set by the caller", s.pos, 20.0, window=5.0)
    s.rx(ROM_BOOT, 26.0)  # too late for it
    s.rx(ROM_BOOT, 27.0)  # the firmware's third boot since the lend: a loop
    assert s.kinds() == ["boot", "reset", "boot", "boot", "boot", "boot", "boot_loop"]
    assert s.events[1].line == "lend"


def test_esptools_line_changes_within_a_second_are_one_reset() -> None:
    s = Stream()
    s.rx(ROM_BOOT, 0.0)
    for dt in (0.0, 0.1, 0.15, 0.2):  # EN low, IO0 low, EN released, IO0 released
        s.detector.expect_reset("DTR/RTS set by esptool (pid 42)", s.pos, 5.0 + dt)
    s.rx(b"\xc0\x01\x08\x04\x00\x07\x07\x12 \xc0" + ROM_BOOT.replace(b"0x13 (SPI", b"0x3 (DOWN"), 5.3)
    assert s.kinds() == ["boot", "reset", "boot"]


def test_the_reboot_after_a_crash_is_the_firmwares_even_just_after_a_users_reset() -> None:
    s = Stream()
    s.rx(ROM_BOOT, 0.0)
    s.detector.expect_reset("capture_boot", s.pos, 1.0)
    panic = b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
    s.rx(b"\x00" + ROM_BOOT + panic + b"Rebooting...\r\n", 1.1)
    s.rx(ROM_BOOT.replace(b"0x1 (POWERON_RESET)", b"0xc (SW_CPU_RESET)"), 1.2)
    assert s.kinds() == ["boot", "reset", "boot", "crash", "boot"]  # (Rebooting... is the panic's)
    assert s.events[-1].crash_offset is not None and "reset" not in s.events[-1].detail


# --- boot loops: once per loop, again once a loop starts after it stopped ---------------------------------


def test_an_ongoing_loop_is_one_event_and_a_new_loop_after_the_users_reset_is_another() -> None:
    s = Stream()
    for i in range(6):  # one loop going on: one event
        s.rx(ROM_BOOT, 1.0 * i)
    assert s.kinds().count("boot_loop") == 1
    s.detector.expect_reset("capture_boot", s.pos, 7.0)  # the agent flashes a fix and resets the board
    s.rx(ROM_BOOT, 7.1)
    for i in range(3):  # it loops again: a new loop, a new event
        s.rx(ROM_BOOT, 8.0 + i)
    assert s.kinds().count("boot_loop") == 2


def test_a_loop_that_stopped_for_a_window_fires_again() -> None:
    s = Stream()
    for t in (0.0, 1.0, 2.0, 3.0, 60.0, 61.0, 62.0):
        s.rx(ROM_BOOT, t)
    assert [e.offset for e in s.events if e.kind == "boot_loop"] == [0, 4 * len(ROM_BOOT)]


# --- interactive sessions: a banner answering the host is no boot -----------------------------------------


def test_u_boot_version_and_bdinfo_typed_at_the_prompt_are_no_boot() -> None:
    events, rx = replay("uboot-interactive.jsonl")
    assert rx.count(b"\nU-Boot 2023.01") == 3  # the boot's banner, and two `version` answers
    assert [e.kind for e in events] == ["boot"]


def test_linux_dmesg_and_proc_version_typed_at_the_shell_are_no_boot() -> None:
    events, rx = replay("linux-interactive.jsonl")
    first = [e for e in events if e.kind == "boot"]
    assert rx.count(b"Linux version") >= 3 and len(first) == 1
    assert [e.kind for e in events if e.offset > first[0].end and e.kind != "stage"] == []


def test_a_banner_right_after_a_write_is_no_boot_unless_a_reset_came_first() -> None:
    s = Stream()
    s.rx(b"U-Boot 2023.01 (Jun 22 2026 - 08:38:07 +0000)\r\n=> ", 0.0)
    s.tx(5.0)
    s.rx(b"version\r\nU-Boot 2023.01 (Jun 22 2026 - 08:38:07 +0000)\r\n=> ", 5.01)
    assert s.kinds() == ["boot"]
    s.tx(8.0)
    s.rx(b"reset\r\nresetting ...\r\n", 8.01)  # announced: what follows is a boot
    s.rx(b"U-Boot 2023.01 (Jun 22 2026 - 08:38:07 +0000)\r\n", 8.3)
    assert s.kinds() == ["boot", "reset", "boot"]


def test_a_banner_after_reset_glitches_is_a_boot_with_a_printable_label() -> None:
    s = Stream()
    s.rx(b"*** Booting Zephyr OS build v3.5.0 ***\r\nuart:~$ ", 0.0)
    s.tx(5.0)  # `kernel reboot cold`: no announcement, but the reset's glitch bytes before the banner
    s.rx(b"kernel reboot cold\r\n\x00\xff*** Booting Zephyr OS build v3.5.0 ***\r\n", 5.05)
    s.tx(9.0)
    s.rx(b"kernel version\r\n*** Booting Zephyr OS build v3.5.0 ***\r\n", 9.01)  # (an answer)
    assert s.kinds() == ["boot", "boot"]
    assert s.events[-1].line == "*** Booting Zephyr OS build v3.5.0 ***"  # printable text only


def test_a_banner_after_a_write_made_before_the_device_spoke_is_a_boot() -> None:
    s = Stream()  # opening the port reset the board (DTR), the agent wrote at once: the board boots
    s.tx(0.0)
    s.rx(b"\r\n*** Booting Zephyr OS build v3.5.0 ***\r\n", 0.3)
    assert s.kinds() == ["boot"]


def test_a_banner_after_silence_or_long_after_a_write_is_a_boot() -> None:
    s = Stream()
    s.rx(b"=> ", 0.0)
    s.tx(1.0)
    s.rx(b"sleep 10\r\n", 1.01)
    s.rx(b"U-Boot 2023.01 (Jun 22 2026 - 08:38:07 +0000)\r\n", 11.0)  # silence, then the banner
    s.rx(b"hello\r\n" * 3, 12.0)
    s.rx(b"U-Boot 2023.01 (Jun 22 2026 - 08:38:07 +0000)\r\n", 12.2)  # no write of ours before it
    assert s.kinds() == ["boot", "boot"]


# --- tracebacks: an exception the program survived, or a crash -------------------------------------------

TRACEBACK = (
    b'Traceback (most recent call last):\r\n  File "<stdin>", line 1, in <module>\r\n'
    b'  File "main.py", line 7, in step\r\nZeroDivisionError: divide by zero\r\n'
)


def test_a_traceback_whose_prompt_comes_back_is_an_exception_with_its_location() -> None:
    s = Stream()
    got = s.rx(b">>> step()\r\n" + TRACEBACK + b">>> ", 0.0)  # the prompt waits for input: no line end
    (exc,) = got
    assert (exc.kind, exc.severity, exc.reason) == ("exception", "info", "ZeroDivisionError: divide by zero")
    assert exc.location() == "step at main.py:7"
    assert s.detector.counters()["exceptions"] == 1 and s.detector.counters()["crashes"] == 0


def test_a_traceback_the_program_does_not_survive_is_a_crash() -> None:
    s = Stream()
    s.rx(TRACEBACK + b"MPY: soft reboot\r\n", 0.0)  # the board restarts
    assert [e.kind for e in s.events] == ["crash", "reset"]
    t = Stream()
    t.rx(TRACEBACK + b"$ ", 0.0)  # a script died: the shell's prompt, not Python's
    assert t.events == [] and t.detector.deadline() == 1.0
    assert [e.kind for e in t.detector.poll(1.0)] == ["crash"]
    u = Stream()
    u.rx(TRACEBACK, 0.0)
    assert [(e.kind, e.severity) for e in u.detector.flush()] == [("crash", "error")]
