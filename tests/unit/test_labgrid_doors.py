"""labgrid:// at the doors, without a lab (issue 25): the URL rules, the allowlist, the refusal of
pyserial's handler, lab resets on a local port, and what a server without the extra says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from serial_mcp.api import SyncEngine
from serial_mcp.core.port_url import labgrid_parts, parse_port, redact
from serial_mcp.core.settings import SerialSettings
from serial_mcp.engine.lab_reset import check, filled
from serial_mcp.errors import ErrorCode, SerialMcpError
from serial_mcp.serial.system_open import SystemOpener

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("port", "place", "resource"),
    [("labgrid://board-07", "board-07", None), ("labgrid://rpi4.lab/console_0", "rpi4.lab", "console_0")],
)
def test_a_place_and_a_resource_are_what_the_url_names(port: str, place: str, resource: str | None) -> None:
    target = parse_port(port)
    assert (target.scheme, target.open_name, target.host) == ("labgrid", port, place)
    assert labgrid_parts(port) == (place, resource)
    assert redact(port) == port


@pytest.mark.parametrize(
    "port",
    [
        "labgrid://",
        "labgrid://user@board",
        "labgrid://board:20408",
        "labgrid://board?timeout=1",
        "labgrid://board#x",
        "labgrid://a/b/c",
        "labgrid://-board",
        "labgrid://bo ard",
        "labgrid://board/",
    ],
)
def test_a_malformed_labgrid_url_is_refused_naming_the_form(port: str) -> None:
    with pytest.raises(SerialMcpError) as refused:
        parse_port(port)
    assert refused.value.code == ErrorCode.INVALID_ARGUMENT
    assert "labgrid://PLACE" in refused.value.message


def test_pyserial_never_opens_a_labgrid_url() -> None:
    with pytest.raises(SerialMcpError) as refused:
        SystemOpener().open("labgrid://board", SerialSettings())
    assert refused.value.code == ErrorCode.NOT_ALLOWED


def test_the_allowlist_judges_labgrid_urls_like_any_url() -> None:
    with SyncEngine(allowlist=["/dev/ttyUSB*"], labgrid_coordinator="127.0.0.1:1") as eng:
        with pytest.raises(SerialMcpError) as refused:
            eng.open("labgrid://board")
        assert refused.value.code == ErrorCode.NOT_ALLOWED
    with SyncEngine(allowlist=["labgrid://bench-*"]) as eng:
        with pytest.raises(SerialMcpError) as elsewhere:
            eng.open("labgrid://board")
        assert elsewhere.value.code == ErrorCode.NOT_ALLOWED
        with pytest.raises(SerialMcpError) as admitted:  # admitted: on to the lab (none is configured)
            eng.open("labgrid://bench-1")
        assert admitted.value.code in (ErrorCode.UNAVAILABLE, ErrorCode.NOT_SUPPORTED)


def test_a_lab_reset_on_a_local_port_is_refused_before_anything_moves() -> None:
    with SyncEngine() as eng:
        conn = eng.open("sim://modem")
        with pytest.raises(SerialMcpError) as refused:
            conn.capture_boot(reset={"power": "cycle", "off_ms": 10})
        assert refused.value.code == ErrorCode.NOT_SUPPORTED and "labgrid://PLACE" in refused.value.message
        assert conn.get_status().state == "open" and conn.get_status().tx_bytes == 0
        conn.close()


@pytest.mark.parametrize(
    ("reset", "needle"),
    [
        ({"power": "on"}, "cycle"),
        ({"power": "cycle", "off_ms": -1}, "off_ms"),
        ({"power": "cycle", "off_ms": True}, "off_ms"),
        ({"power": "cycle", "of_ms": 5}, "off_ms"),  # did you mean
        ({"power": "cycle", "name": ""}, "name"),
        ({"digital_output": 3}, "digital_output"),
        ({"digital_output": "reset", "hold_ms": 0}, "hold_ms"),
    ],
)
def test_a_bad_lab_reset_is_refused_saying_what_is_wrong(reset: dict[str, object], needle: str) -> None:
    with pytest.raises(SerialMcpError) as refused:
        check(reset)  # the reset option's validator: refused as capture_boot's options are built
    assert refused.value.code == ErrorCode.INVALID_ARGUMENT and needle in refused.value.message


def test_lab_resets_parse_to_their_defaults() -> None:
    assert filled({"power": "cycle"}) == {"power": "cycle", "off_ms": 1000, "name": None}
    assert filled({"digital_output": True}) == {"digital_output": None, "hold_ms": 100}
    assert filled({"dtr": False}) == {"dtr": False, "rts": None, "hold_ms": 100}  # unchanged


WITHOUT_LABGRID = r"""
import json, sys

class NoLabgrid:  # as if the serial-mcp[labgrid] extra were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "labgrid" or name.startswith("labgrid."):
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoLabgrid())
from serial_mcp.api import SyncEngine
from serial_mcp.errors import SerialMcpError

out = {}
with SyncEngine() as eng:  # no coordinator: nothing changes, labgrid is not even looked for
    conn = eng.open("sim://modem")
    out["sim"] = conn.transact("AT\r", match="OK", timeout_ms=2000).read.matched
    conn.close()
    out["ports_lab_error"] = eng.list_ports().lab_error
    out["imported_without_coordinator"] = "labgrid" in sys.modules
with SyncEngine(labgrid_coordinator="127.0.0.1:1") as eng:
    try:
        eng.open("labgrid://board")
    except SerialMcpError as exc:
        out["open"] = {"code": str(exc.code), "message": exc.message}
    out["listed"] = eng.list_ports().lab_error
print(json.dumps(out))
"""


@pytest.mark.slow  # over a second: the full suite runs it, the fast lane does not
def test_without_the_extra_labgrid_says_how_to_install_it_and_nothing_else_changes() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LABGRID],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["sim"] is True and out["ports_lab_error"] is None
    assert out["imported_without_coordinator"] is False
    assert out["open"]["code"] == "not_supported"
    for said in (out["open"]["message"], out["listed"]):  # issue 42.2: what installs this project's extra
        assert "pip install 'labgrid==26.0.1'" in said and "pip install '.[labgrid]'" in said, said
        assert "serial-mcp[labgrid]" not in said  # that name is another project on PyPI
