"""The Python API is typed from the options: ``mypy --strict`` rejects an unknown keyword or a
wrong type, as the API refuses it at run time (tests/unit/test_api_contract.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # runs mypy

SNIPPET = '''
from serial_mcp import Engine, SyncEngine


async def main() -> None:
    async with Engine() as eng:
        conn = await eng.open("sim://modem", baud_rate=9600)
        await conn.transact("AT", match="OK")
        await conn.transact("AT", mtch="OK")
        await conn.transact("AT", timeout_ms="fast")
        await eng.open("sim://modem", baud_rat=9600)


def blocking() -> None:
    with SyncEngine(read_only=False) as eng:
        conn = eng.open("sim://modem", baud_rate=9600)
        conn.transact("AT", match="OK")
        eng.open("sim://modem", baud_rat=9600)
        conn.transact("AT", mtch="OK")
        SyncEngine(read_onl=True)
        eng.open_profile("bench", mode="x")
        conn.write("x", pace={"inter_byte_uss": 5})
        eng.open("sim://modem", reconnect={"max_atempts": 3}, pace={"inter_line_ms": 5})
        eng.configure({"baud_rat": 9600}, profile="bench")
        eng.configure({"baud_rate": 9600, "respond": ["terminal"]}, profile="bench")
        conn.read(rx_framing={"type": "line", "endign": "lf"})
        conn.read(rx_parser={"type": "nmea", "validat": True})
        conn.capture_boot(reset={"dtr": False, "hold": 5})
        conn.write("x", tx_framing={"type": "line", "ending": "lf"})
        conn.capture_boot(reset={"power": "cycle", "off_ms": 500}, rx_parser={"type": "raw"})
        conn.read(verbose=True)
'''


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_rejects_a_misspelt_option_and_a_wrong_type(tmp_path: Path) -> None:
    source = tmp_path / "uses_api.py"
    source.write_text(SNIPPET)
    # In a child process: mypy's in-process api raises the interpreter's recursion limit for good,
    # which changed what later tests in the same run saw (the profile store's depth refusal).
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    out, status = run.stdout, run.returncode
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, out
    assert any(':9: error: Unexpected keyword argument "mtch"' in e and '"match"' in e for e in errors), out
    assert any(":10: error:" in e and '"timeout_ms"' in e for e in errors), out
    assert any(':11: error: Unexpected keyword argument "baud_rat"' in e for e in errors), out
    assert not any(":8:" in e or ":7:" in e for e in errors), out  # the right calls type-check
    # the blocking API is as typed as the async one (issue 41.1)
    assert any(':18: error: Unexpected keyword argument "baud_rat"' in e for e in errors), out
    assert any(':19: error: Unexpected keyword argument "mtch"' in e for e in errors), out
    assert any(':20: error: Unexpected keyword argument "read_onl"' in e for e in errors), out
    assert any(':21: error: Unexpected keyword argument "mode"' in e for e in errors), out
    assert not any(f":{n}:" in e for e in errors for n in (15, 16, 17)), out
    # and so are the nested options (typed dicts): a misspelt key of pace or reconnect is a mypy error
    assert any(':22: error: Argument "pace"' in e for e in errors), out
    assert any(':23: error: Argument "reconnect"' in e for e in errors), out
    assert not any(':23: error: Argument "pace"' in e for e in errors), out  # a right one type-checks
    assert any(":24: error:" in e and "baud_rat" in e for e in errors), out  # configure's defaults too
    assert not any(":25:" in e for e in errors), out
    # every nested option is declared (issue 41.1): framing, parser and reset keys are checked too
    assert any(':26: error: Argument "rx_framing"' in e for e in errors), out
    assert any(':27: error: Argument "rx_parser"' in e for e in errors), out
    assert any(':28: error: Argument "reset"' in e for e in errors), out
    assert not any(f":{n}:" in e for e in errors for n in (29, 30)), out
    assert any(':31: error: Unexpected keyword argument "verbose"' in e for e in errors), out  # answers'
