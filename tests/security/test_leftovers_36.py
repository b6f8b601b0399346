"""Issue 36.9, leftovers of the earlier security review.

* The CLI's ``read`` of a device that floods goes on past an overrun (the loss counted) until the read
  cap, the pattern or the timeout, instead of stopping at the first overrun.
* A refused port path is not echoed back whole when it carries ``?pw=`` / ``password=``-style text.
(``serial-mcp view`` reading a FIFO or ``<(process substitution)``: tests/security/test_hostile_view.py.)
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from serial_mcp import Engine
from serial_mcp.api import PortPolicy
from serial_mcp.commands import oneshot
from serial_mcp.engine.results import ReadResult
from serial_mcp.errors import SerialMcpError


class _FloodedPort:
    """What a read of a flooding device answers: the ring overran each read once, then the cap."""

    def __init__(self, parts: list[ReadResult]) -> None:
        self.parts = parts
        self.asked: list[dict[str, Any]] = []

    async def read(self, **kwargs: Any) -> ReadResult:
        self.asked.append(kwargs)
        return self.parts.pop(0)


def test_a_cli_read_goes_on_past_an_overrun_and_counts_the_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    parts = [
        ReadResult(data="A" * 100, stop_reason="overrun", from_offset=0, next_offset=100),
        ReadResult(
            data="B" * 100, stop_reason="overrun", from_offset=5000, next_offset=5100, bytes_lost=4900
        ),
        ReadResult(
            data="C" * 50, stop_reason="max_bytes", from_offset=9000, next_offset=9050, bytes_lost=3900
        ),
    ]
    port = _FloodedPort(parts)

    async def on_port(policy: Any, name: str, baud: Any, call: Any, **_: Any) -> Any:
        return await call(port)

    monkeypatch.setattr(oneshot, "_on_port", on_port)
    out = io.StringIO()  # --json: the result as one JSON line
    code = oneshot.run_read(PortPolicy(), "/dev/flood", None, 5000, None, None, 250, True, out)
    assert code == oneshot.EXIT_OK
    result = json.loads(out.getvalue())
    assert result["data"] == "A" * 100 + "B" * 100 + "C" * 50  # every part, in order
    assert result["bytes_lost"] == 4900 + 3900 and result["stop_reason"] == "max_bytes"
    assert (result["from_offset"], result["next_offset"]) == (0, 9050)
    assert [a["max_bytes"] for a in port.asked] == [250, 150, 50]  # the cap is the whole read's


SECRET = "hunter2secret"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "port",
    [f"/dev/ttyS9?pw={SECRET}", f"/dev/ttyS9?password={SECRET}", f"/dev/serial/password={SECRET}/tty0"],
)
async def test_a_refused_port_path_does_not_echo_its_secret(port: str, tmp_path: Path) -> None:
    async with Engine(allowlist=["/dev/ttyUSB*"], capture_dir=tmp_path) as engine:
        with pytest.raises(SerialMcpError) as info:
            await engine.open(port)
    assert info.value.code == "not_allowed"
    assert SECRET not in info.value.message and "***" in info.value.message
