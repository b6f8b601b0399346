"""The decode code as it was before the issue 14 throughput work, loaded from git, so bench_decode.py
can time the old and the new implementation in the same run and check_decode_equivalence.py can
compare their output — without a frozen copy of the code in the tree.

``BASELINE`` is the commit before that work. Each module is read with ``git show`` and imported
under a private name; its imports of the other old modules are pointed at their old versions, so
``gnss_old`` frames with the old line and scan decoders. ``decode_old.StreamDecoder`` takes the
framing decoder and parser objects themselves (the old one built them through today's registry).
"""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

BASELINE = "2b25394~1"
ROOT = Path(__file__).resolve().parents[1]
_FILES = {  # name here: (path in the baseline, the import it replaces in the other old modules)
    "scan_old": ("serial_mcp/core/framing/scan.py", "serial_mcp.core.framing.scan"),
    "line_old": ("serial_mcp/core/framing/line.py", "serial_mcp.core.framing.line"),
    "gnss_old": ("serial_mcp/core/framing/gnss.py", "serial_mcp.core.framing.gnss"),
    "nmea_old": ("serial_mcp/core/parsers/nmea.py", "serial_mcp.core.parsers.nmea"),
    "decode_old": ("serial_mcp/core/decode.py", "serial_mcp.core.decode"),
}


def _load(name: str) -> types.ModuleType:
    path, _ = _FILES[name]
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BASELINE}:{path}"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"the (old) rows need this checkout's git history ({BASELINE}): {exc}") from None
    for other, (_, dotted) in _FILES.items():
        if other != name:
            source = source.replace(f"from {dotted} import", f"from legacy_{other} import")
    module = types.ModuleType(f"legacy_{name}")
    module.__file__ = f"{BASELINE}:{path}"
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # our own code, at a commit
    return module


scan_old = _load("scan_old")
line_old = _load("line_old")
gnss_old = _load("gnss_old")
nmea_old = _load("nmea_old")
decode_old = _load("decode_old")


class _OldStreamDecoder(decode_old.StreamDecoder):  # type: ignore[name-defined,misc]
    """The old pipeline around given decoder and parser objects."""

    def __init__(self, decoder: Any, parser: Any = None) -> None:
        self._decoder = decoder
        self._parser = parser
        self.validate = parser.validate if parser is not None else False
        self.frames_dropped = 0


decode_old.StreamDecoder = _OldStreamDecoder
