"""The code and its tests stay ``mypy --strict`` and ``ruff check`` clean (the settings in pyproject.toml).

Skipped where the tools are not installed (they come with the ``test`` extra). mypy keeps its
incremental cache in the project's ``.mypy_cache``: a warm run takes about a second, a cold one
some tens of seconds.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # mypy over the whole tree: minutes on a busy machine

ROOT = Path(__file__).resolve().parents[2]
CHECKED = [ROOT / "serial_mcp", ROOT / "tests"]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_strict_is_clean_on_the_code_and_its_tests() -> None:
    from mypy import api

    config = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    stdout, stderr, status = api.run([*config, *map(str, CHECKED)])
    assert status == 0, stdout + stderr


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (pip install -e '.[test]')")
def test_ruff_check_is_clean_on_the_code_and_its_tests() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ruff", "check", *map(str, CHECKED)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
