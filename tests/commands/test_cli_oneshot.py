"""``serial-mcp ports / send / read`` as a bench engineer runs them: real subprocesses, exit codes,
stdout for the data or the tool's JSON, stderr for the status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from serial_mcp.engine.results import ListPortsResult, ReadResult, TransactResult
from serial_mcp.store.capture_files import read_capture

pytestmark = pytest.mark.slow

CAPTURES = Path(__file__).parents[2] / "captures"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "serial_mcp", *args],
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )


def test_send_with_expect_prints_the_transact_result() -> None:
    r = cli("send", "sim://modem", r"AT\r", "--expect", "OK", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    # the transact tool's structuredContent: its model, every field, nothing else
    assert TransactResult.model_validate(result).model_dump(mode="json") == result
    assert set(result) == set(TransactResult.model_fields)
    assert result["write"]["bytes_written"] == 3  # \r is one byte
    assert result["read"]["matched"] and result["read"]["stop_reason"] == "match"
    assert result["read"]["data"].endswith("OK")
    assert len(r.stderr.splitlines()) == 1 and b"stop=match" in r.stderr


def test_send_prints_the_reply_bytes_and_the_status_apart() -> None:
    r = cli("send", "sim://modem", r"AT+CSQ\r")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"\r\n+CSQ: 23,99\r\n\r\nOK\r\n"  # exactly the reply, nothing else
    assert b"wrote 7 bytes" in r.stderr


def test_send_with_a_protocol_prints_one_line_per_frame() -> None:
    r = cli("send", "sim://modem", "AT+CSQ", "--protocol", "at_command")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert lines[-1]["status"] == "OK" and any("+CSQ" in json.dumps(x) for x in lines)


def test_send_escapes_are_bytes() -> None:
    r = cli("send", "sim://echo", r"a\x03\tb\\", "--expect", r"b", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["write"]["bytes_written"] == 5  # a, ETX, TAB, b, backslash


def test_no_match_in_time_is_exit_1() -> None:
    r = cli("send", "sim://modem", r"AT\r", "--expect", "NEVER", "--timeout-ms", "300", "--json")
    assert r.returncode == 1
    read = json.loads(r.stdout)["read"]
    assert not read["matched"] and read["stop_reason"] == "timeout"


def test_read_what_the_port_sends() -> None:
    r = cli("read", "sim://modem", "--expect", "READY")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"\r\nSIM MODEM READY"


def test_read_nothing_in_time_is_exit_1() -> None:
    r = cli("read", "sim://echo", "--timeout-ms", "200", "--json")  # an echo device says nothing first
    assert r.returncode == 1
    result = json.loads(r.stdout)
    assert ReadResult.model_validate(result).model_dump(mode="json") == result
    assert result["stop_reason"] == "timeout" and result["data"] == ""


def test_read_a_replayed_capture() -> None:
    sample = CAPTURES / "uboot-mt7622.jsonl"
    r = cli("read", f"replay://{sample}?mode=instant", "--expect", "Jump to BL", cwd=CAPTURES.parent)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith(b"Jump to BL") and read_capture(sample).payload("rx").startswith(r.stdout)


def test_a_missing_port_is_exit_3() -> None:
    r = cli("send", "/dev/serial-mcp-no-such-port", "AT", "--json")
    assert r.returncode == 3
    assert json.loads(r.stdout)["error"]["code"] == "port_not_found"
    assert len(r.stderr.splitlines()) == 1


def test_a_refused_scheme_is_a_port_error() -> None:
    r = cli("read", "gopher://example/1")
    assert r.returncode == 3 and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("send",),  # no PORT, DATA
        ("send", "sim://modem", "AT", "--timeout-ms", "soon"),
        ("send", "sim://modem", r"AT\q"),  # an unknown escape: refused, not guessed
        ("read", "sim://modem", "--protocol", "no-such-protocol"),
        ("ports", "--bogus"),
    ],
)
def test_usage_errors_are_exit_2(args: tuple[str, ...]) -> None:
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    assert r.stdout == b"" and len(r.stderr.splitlines()) == 1


def test_ports_json_is_the_list_ports_result() -> None:
    r = cli("ports", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert ListPortsResult.model_validate(result).model_dump(mode="json") == result
    assert all({"name", "transport"} <= set(p) for p in result["ports"])
    text = cli("ports")
    assert text.returncode == 0
    assert [line.split(b"\t")[0] for line in text.stdout.splitlines()] == [
        p["name"].encode() for p in result["ports"]
    ]


def test_replay_to_stdout_ends_when_the_recording_has_played() -> None:
    """It used to block forever on a read after the last byte (the replay was done, nothing more due)."""
    sample = CAPTURES / "uboot-mt7622.jsonl"
    r = cli("replay", str(sample), "--mode", "instant")
    assert r.returncode == 0, r.stderr
    assert r.stdout == read_capture(sample).payload("rx")


@pytest.mark.anyio
async def test_json_is_what_the_tool_returns() -> None:
    """The same exchange through the MCP server's tools and through ``send --json``: equal results."""
    from mcp import Client

    from serial_mcp.mcp.server import build_server
    from serial_mcp.serial.manager import ConnectionManager
    from serial_mcp.serial.openers import default_opener
    from tests.tool_calls import call, lean_call

    async with Client(build_server(ConnectionManager(default_opener()))) as c:
        opened = await call(c, "open", {"port": "sim://modem"})
        args = {"connection_id": opened["connection_id"], "data": "AT+CSQ\r", "match": "OK"}
        tool = await lean_call(c, "transact", args)  # as the tool sends it (lean, issue 26)
    r = cli("send", "sim://modem", r"AT+CSQ\r", "--expect", "OK", "--json")
    assert r.returncode == 0, r.stderr
    from serial_mcp.answers import structured
    from serial_mcp.engine.results import TransactResult

    # the CLI prints every field; made lean (issue 26) it is exactly what the tool sends
    assert structured(TransactResult.model_validate(json.loads(r.stdout))) == tool


def test_record_refuses_a_bad_capture_name_before_opening_the_port(tmp_path: Path) -> None:
    r = cli("record", "/dev/serial-mcp-no-such-port", "-o", str(tmp_path / "boot log.txt"))
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    assert b".jsonl" in r.stderr and b"does not exist" not in r.stderr  # the name, not the port
    assert list(tmp_path.iterdir()) == []


# --- issue 28.15: the one-shots under bad data ------------------------------------------------------


def test_send_expect_sees_past_64_kib_of_reply() -> None:
    """The match is 70 000 bytes into the reply: it used to stop at the 64 KiB read bound, "no match"."""
    r = cli("send", "sim://echo", "A" * 70_000 + "MARK", "--expect", "MARK", "--json")
    assert r.returncode == 0, r.stderr
    read = json.loads(r.stdout)["read"]
    assert read["matched"] and read["stop_reason"] == "match" and read["data"].endswith("AMARK")
    assert len(read["data"]) == 70_004


def test_max_bytes_bounds_the_reply_and_says_so() -> None:
    r = cli("send", "sim://echo", "A" * 5000 + "MARK", "--expect", "MARK", "--max-bytes", "1024", "--json")
    assert r.returncode == 1  # no match: but not a silent one
    read = json.loads(r.stdout)["read"]
    assert read["stop_reason"] == "max_bytes" and len(read["data"]) == 1024
    lines = r.stderr.decode().splitlines()
    assert any("max_bytes" in line and "--max-bytes" in line for line in lines), r.stderr


def test_read_takes_max_bytes() -> None:
    r = cli("read", "sim://modem", "--max-bytes", "6", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["data"] == "\r\nSIM " and result["stop_reason"] == "max_bytes"


@pytest.mark.parametrize("value", ["0", "lots", str(4 * 1024 * 1024 + 1)])
def test_a_bad_max_bytes_is_a_usage_error(value: str) -> None:
    r = cli("send", "sim://echo", "x", "--max-bytes", value)
    assert r.returncode == 2 and r.stdout == b"" and len(r.stderr.splitlines()) == 1, r.stderr
    assert b"--max-bytes" in r.stderr and b"1 to 4194304" in r.stderr  # what would do


@pytest.mark.parametrize("command", [("send", "sim://modem", r"AT\r"), ("read", "sim://modem"), ("ports",)])
def test_with_stdout_closed_a_command_says_so_and_exits_2(command: tuple[str, ...]) -> None:
    """``serial-mcp send … >&-`` printed an internal "'NoneType' … isatty" and exited 1 ("no match")."""
    r = subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", sys.executable, "-m", "serial_mcp", *command],
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and "stdout" in lines[0] and "NoneType" not in lines[0], lines


def test_the_max_bytes_flag_has_the_reads_own_bound() -> None:
    from serial_mcp import cli as command_line
    from serial_mcp.serial.reader import MAX_MAX_BYTES

    assert command_line.MAX_READ_BYTES == MAX_MAX_BYTES
