"""A small C program built with ``gcc -g`` for the ELF tests: a crash site two calls deep, so a decoded
backtrace has a function, its caller and a file:line to check (tests/unit/test_events_elf.py, and the
hostile copies of tests/security/test_hostile_elf.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = """\
#include <stdio.h>
__attribute__((noinline)) int crash_here(int *p) { return *p + 1; }
__attribute__((noinline)) int app_main(int n) { int r = crash_here(&n); printf("%d\\n", r); return r; }
int main(int argc, char **argv) { (void)argv; return app_main(argc); }
"""


def build_app_elf(directory: Path, *tools: str) -> Path:
    """``directory/app.elf`` built from ``SOURCE``; skipped, loudly, without gcc or one of ``tools``."""
    missing = [t for t in ("gcc", *tools) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} (gcc, binutils) needed to build and check an ELF")
    (directory / "main.c").write_text(SOURCE)
    subprocess.run(["gcc", "-g", "-O1", "-o", "app.elf", "main.c"], cwd=directory, check=True, timeout=120)
    return directory / "app.elf"
