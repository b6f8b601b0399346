"""Baud detection scoring on the real boot logs, garbled by the UART model at every wrong rate."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core.baud import COMMON_RATES, MIN_BYTES, BaudVerdict, rank, score_text, simulate_garble

BOOTLOGS = sorted((Path(__file__).parents[1] / "data" / "bootlogs").glob("*/*"))
STANDARD = [9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600]


def windows(size: int = 1000) -> list[tuple[str, bytes]]:
    """Three stretches of each boot log: what a detector hears in a second or so."""
    out = []
    for path in BOOTLOGS:
        data = path.read_bytes()
        for start in (0, len(data) // 3, 2 * len(data) // 3):
            out.append((f"{path.parent.name}@{start}", data[start : start + size]))
    return out


WINDOWS = windows()


def listen(text: bytes, true_baud: int, rates: list[int], seed: int = 0) -> dict[int, bytes]:
    return {rate: simulate_garble(text, true_baud, rate, seed=seed + rate) for rate in rates}


# --- the UART model -----------------------------------------------------------------------------------


def test_garble_is_identity_at_the_true_rate() -> None:
    text = WINDOWS[0][1]
    assert simulate_garble(text, 115200, 115200, seed=3) == text
    assert simulate_garble(b"", 9600, 115200) == b""


def test_garble_is_deterministic_and_seeded() -> None:
    text = WINDOWS[1][1]
    assert simulate_garble(text, 115200, 57600, seed=1) == simulate_garble(text, 115200, 57600, seed=1)
    assert simulate_garble(text, 115200, 57600, seed=1) != simulate_garble(text, 115200, 57600, seed=2)


def test_garble_byte_counts_follow_the_rate() -> None:
    """Too slow a setting reads fewer bytes, too fast a setting more, full of 0x00 and high bits."""
    text = WINDOWS[2][1]
    slow = simulate_garble(text, 115200, 9600)
    fast = simulate_garble(text, 115200, 921600)
    assert len(slow) < len(text) / 4
    assert len(fast) > len(text)
    assert sum(b == 0 or b >= 0x80 for b in fast) > 0.8 * len(fast)


def test_garble_within_uart_tolerance_reads_true() -> None:
    """2 % off still samples every bit in its middle: the text survives (as real UARTs allow)."""
    text = WINDOWS[3][1]
    assert simulate_garble(text, 115200, 117500) == text


# --- scoring -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text"), WINDOWS, ids=[n for n, _ in WINDOWS])
def test_real_logs_score_high(name: str, text: bytes) -> None:
    assert score_text(text) >= 0.85


@pytest.mark.parametrize(
    ("data", "low", "high"),
    [
        (b"", 0.0, 0.0),
        (bytes(500), 0.0, 0.05),
        (b"\xff" * 500, 0.0, 0.05),
        (random.Random(1).randbytes(500), 0.0, 0.2),
        (b"Hit any key to stop autoboot:  3 ", 0.9, 1.0),
        (b"The quick brown fox jumps over the lazy dog.\r\n" * 5, 0.9, 1.0),
        ("Grüße aus Köln: ¡sí, señor!\n".encode() * 4, 0.9, 1.0),
        (b"\x1b[0;32mI (568) cpu_start: Pro cpu up.\x1b[0m\n", 0.9, 1.0),
        (b"\x80\x00\xf8\x80\x00\x00\xfe\x80\x1e\xe6\x98" * 40, 0.0, 0.1),
    ],
    ids=["empty", "zeros", "ones", "random", "autoboot", "english", "utf8", "ansi", "framing-errors"],
)
def test_score_ranges(data: bytes, low: float, high: float) -> None:
    assert low <= score_text(data) <= high


@given(st.binary(max_size=400))
def test_score_is_in_unit_interval(data: bytes) -> None:
    assert 0.0 <= score_text(data) <= 1.0


# --- ranking the real logs -------------------------------------------------------------------------------


@pytest.mark.parametrize("true_baud", STANDARD)
@pytest.mark.parametrize(("name", "text"), WINDOWS, ids=[n for n, _ in WINDOWS])
@pytest.mark.slow
def test_true_rate_wins_conclusively(name: str, text: bytes, true_baud: int) -> None:
    heard = listen(text, true_baud, STANDARD)
    verdict = rank(heard)
    assert verdict.conclusive, verdict.reason
    assert verdict.best == true_baud == verdict.ranked[0][0]
    assert f"{true_baud} reads as text" in verdict.reason
    assert [b for b, _ in verdict.ranked][1:] == sorted(
        (b for b in STANDARD if b != true_baud), key=lambda b: (-dict(verdict.ranked)[b], -len(heard[b]), b)
    )


@pytest.mark.parametrize("true_baud", [74880, 115200])
def test_esp_rates_among_all_common_rates(true_baud: int) -> None:
    text = WINDOWS[0][1]  # the ESP32 log
    verdict = rank(listen(text, true_baud, list(COMMON_RATES), seed=9))
    assert verdict.conclusive and verdict.best == true_baud, verdict


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(range(len(WINDOWS))), st.sampled_from(STANDARD), st.integers(0, 2**32))
@pytest.mark.slow
def test_true_rate_wins_for_any_seed(window: int, true_baud: int, seed: int) -> None:
    verdict = rank(listen(WINDOWS[window][1], true_baud, STANDARD, seed=seed))
    assert verdict.conclusive and verdict.best == true_baud


# --- inconclusive ------------------------------------------------------------------------------------------


def assert_inconclusive(verdict: BaudVerdict, words: str) -> None:
    assert not verdict.conclusive and verdict.best is None
    assert verdict.reason.startswith("inconclusive") and words in verdict.reason


def test_silent_device() -> None:
    verdict = rank(dict.fromkeys(STANDARD, b""))
    assert_inconclusive(verdict, "no bytes arrived at any of the 8 rates")
    assert len(verdict.ranked) == 8 and all(score == 0 for _, score in verdict.ranked)


def test_no_candidates() -> None:
    assert_inconclusive(rank({}), "no candidate rates")


def test_too_few_bytes() -> None:
    heard = listen(b"OK\r\n", 115200, STANDARD)
    assert_inconclusive(rank(heard), f"only 4 bytes arrived at 115200 (at least {MIN_BYTES}")


def test_binary_device() -> None:
    """A device speaking a binary protocol (random-looking frames) scores low at every rate."""
    frames = random.Random(7).randbytes(1200)
    verdict = rank(listen(frames, 115200, STANDARD))
    assert_inconclusive(verdict, "no rate reads as text")


def test_two_rates_too_close() -> None:
    """Rates within the UART tolerance of each other read the same text: no winner."""
    text = WINDOWS[4][1]
    verdict = rank(listen(text, 115200, [9600, 115200, 117500]))
    assert_inconclusive(verdict, "read about equally well")
    assert {b for b, _ in verdict.ranked[:2]} == {115200, 117500}


# --- probes --------------------------------------------------------------------------------------------------


def test_probe_answer_decides_a_quiet_device() -> None:
    heard = listen(b"AT\r\r\nOK\r\n", 9600, STANDARD)
    verdict = rank(heard, probe_answer={rate: rate == 9600 for rate in STANDARD})
    assert verdict.conclusive and verdict.best == 9600 and "only 9600 answered the probe" in verdict.reason
    assert verdict.ranked[0][0] == 9600


def test_probe_answered_at_several_rates() -> None:
    heard = dict.fromkeys(STANDARD, b"")
    verdict = rank(heard, probe_answer={9600: True, 19200: True})
    assert_inconclusive(verdict, "several rates (9600, 19200)")


def test_probe_without_answer_falls_back_to_text() -> None:
    text = WINDOWS[5][1]
    verdict = rank(listen(text, 57600, STANDARD), probe_answer=dict.fromkeys(STANDARD, False))
    assert verdict.conclusive and verdict.best == 57600
