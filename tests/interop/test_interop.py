"""Interop with the TypeScript side of MCP, run from the npm packages pinned in package.json:

- the TypeScript SDK client over stdio (tools/list, compute_checksum, a PTY round trip),
- the Inspector CLI (2.12.0) in both protocol eras,
- the conformance suite (0.1.16) against the streamable-HTTP transport, checked against the
  committed baseline conformance-expected-failures.yml.

Needs ``npm ci`` in tests/interop (``.ci/run`` does it); without node_modules the module skips.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pty.devices import AtResponder, PtyDevice

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"
NODE = NODE_MODULES / ".bin" / "node"  # Node 22 from the `node` npm package (the suite needs >= 22)
INSPECTOR = (
    NODE_MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)
CONFORMANCE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = HERE / "conformance-expected-failures.yml"

if not NODE.exists():
    pytest.skip(
        f"{NODE_MODULES} is missing: run `npm ci` in tests/interop (needs node and npm; .ci/run does it)",
        allow_module_level=True,
    )

RUN_TIMEOUT = 120  # seconds, for one node process (and the server it may spawn)
CORE_TOOLS = {"list_ports", "open", "close", "read", "write", "transact", "get_status", "compute_checksum"}
CRC16_MODBUS_123456789 = {
    "algorithm": "crc16_modbus",
    "checksum": 0x4B37,
    "checksum_hex": "4b37",
    "width_bytes": 2,
    "wire_hex": "4b37",  # big-endian: byte_order "big" is the default, which a lean result leaves out
}
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


def node_env(tmp_path: Path) -> dict[str, str]:
    """The caller's environment without SERIAL_MCP_* (no token, no stray transport), with Node 22 first
    on PATH (as npx would do), a private profiles file and a private Inspector catalog."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERIAL_MCP_")}
    env["PATH"] = f"{NODE.parent}{os.pathsep}{env.get('PATH', '')}"
    env["SERIAL_MCP_PROFILES"] = str(tmp_path / "profiles.toml")
    env["MCP_CATALOG_PATH"] = str(tmp_path / "inspector-catalog.json")
    env["NO_COLOR"] = "1"
    return env


def run_node(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``node args`` in its own process group; on timeout (and after it exits) the whole group is
    killed, so a server it spawned can never outlive the test."""
    proc = subprocess.Popen(
        [str(NODE), *args],
        cwd=HERE,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"node {args[:2]} did not finish within {RUN_TIMEOUT}s\nstdout:\n{out}\nstderr:\n{err}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def last_json(stdout: str) -> Any:
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert lines, "no output"
    return json.loads(lines[-1])


# --- TypeScript SDK client over stdio ----------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the PTY round trip needs Linux PTYs")
def test_ts_sdk_client_over_stdio(tmp_path: Path) -> None:
    responder = AtResponder()
    dev = PtyDevice(responder).start()
    try:
        r = run_node(["ts_client.mjs", sys.executable, dev.path], node_env(tmp_path))
    finally:
        dev.close()
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    rep = last_json(r.stdout)
    assert rep["offeredProtocolVersion"] == "2025-11-25"
    assert rep["protocolVersion"] == "2025-11-25"
    assert rep["serverInfo"]["name"] == "serial-mcp"
    assert {"tools", "resources", "prompts"} <= set(rep["capabilities"])
    tools = {t["name"]: t for t in rep["tools"]}
    assert set(tools) >= CORE_TOOLS
    assert all(t["hasOutputSchema"] for t in tools.values())  # so the SDK validated every result below

    assert rep["checksum"]["isError"] is False
    assert rep["checksum"]["structured"] == CRC16_MODBUS_123456789
    assert rep["open"]["isError"] is False and rep["open"]["structured"]["port"] == dev.path
    assert rep["transact"]["isError"] is False
    read = rep["transact"]["structured"]["read"]
    # a lean result: a match index means matched, and no bytes_lost field means none were lost
    assert read["data"] == "\r\nts-sdk\r\nOK\r\n" and read["match_index"] >= 0 and "bytes_lost" not in read
    assert rep["transact"]["structured"]["write"]["bytes_written"] == len("AT+ECHO=ts-sdk\r")
    assert responder.commands == [b"AT+ECHO=ts-sdk"]
    assert rep["missing"]["isError"] is True
    assert rep["missing"]["structured"]["error"]["code"] == "port_not_found"
    assert rep["close"]["isError"] is False


# --- Inspector CLI -----------------------------------------------------------------------------------


def inspector(era: str, tmp_path: Path, *method_args: str) -> Any:
    env = node_env(tmp_path)
    args = [str(INSPECTOR), "--cli", "--protocol-era", era, "--format", "json", "-q"]
    # the Inspector passes the server only a default environment plus -e pairs
    args += ["-e", f"SERIAL_MCP_PROFILES={env['SERIAL_MCP_PROFILES']}"]
    args += [sys.executable, "-m", "serial_mcp", *method_args]
    r = run_node(args, env)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return last_json(r.stdout)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_cli_tools_list(era: str, tmp_path: Path) -> None:
    # --strict: exit 6 on any error-severity schema portability finding (warnings are listed only)
    out = inspector(era, tmp_path, "--method", "tools/list", "--strict")
    names = {t["name"] for t in out["result"]["tools"]}
    assert names >= CORE_TOOLS
    severities = {f["severity"] for t in out.get("schemaFindings", []) for f in t["findings"]}
    assert "error" not in severities


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_cli_tools_call(era: str, tmp_path: Path) -> None:
    args = json.dumps({"data": "123456789", "algorithm": "crc16_modbus"})
    out = inspector(
        era, tmp_path, "--method", "tools/call", "--tool-name", "compute_checksum", "--tool-args-json", args
    )
    result = out["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == CRC16_MODBUS_123456789
    assert result["content"][0]["text"] == "crc16_modbus = 0x4b37 (19255)"
    meta = result.get("_meta") or {}
    if era == "modern":  # the 2026-07-28 path stamps serverInfo on every result
        assert meta[SERVER_INFO_META]["name"] == "serial-mcp"
    else:
        assert SERVER_INFO_META not in meta


# --- conformance suite against streamable HTTP -------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``serial-mcp --transport http`` on a free loopback port, no token (loopback needs none)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "serial_mcp", "--transport", "http", "--port", str(port)],
        env=node_env(tmp_path_factory.mktemp("http")),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # an external process's listening socket: connect until it answers (bounded)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                if time.monotonic() > deadline:
                    pytest.fail("HTTP server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
        assert proc.poll() is None, "the HTTP server died during the conformance run"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.stdout is not None and proc.stdout.read() == b"", "nothing on stdout"


def load_baseline() -> dict[str, Any]:
    r = run_node(["yaml_to_json.mjs", str(BASELINE)], {**os.environ})
    assert r.returncode == 0, r.stderr
    baseline: dict[str, Any] = last_json(r.stdout)
    return baseline


ANSI = re.compile(r"\x1b\[[0-9;]*m")
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def scenario_checks(out_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """``-o`` writes one ``server-<scenario>-<timestamp>/checks.json`` per scenario."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in out_dir.glob("*/checks.json"):
        m = RESULT_DIR.match(checks.parent.name)
        assert m, checks
        found[m["scenario"]] = json.loads(checks.read_text())
    return found


def test_baseline_is_consistent() -> None:
    baseline = load_baseline()
    listed = baseline["server"]
    assert len(listed) == len(set(listed)), "duplicate entries"
    assert set(listed) == set(baseline["reasons"]), "`server:` and `reasons:` must name the same scenarios"


@pytest.mark.parametrize("spec_version", ["2025-06-18", "2025-11-25"])
def test_conformance_suite_matches_baseline(spec_version: str, http_url: str, tmp_path: Path) -> None:
    """``--spec-version`` selects the scenarios written for that version (cumulative: 2025-11-25 runs
    all of them); on the wire the suite's client negotiates 2025-11-25 either way."""
    out_dir = tmp_path / "results"
    r = run_node(
        [
            str(CONFORMANCE),
            "server",
            "--url",
            http_url,
            "--suite",
            "all",
            "--spec-version",
            spec_version,
            "--expected-failures",
            str(BASELINE),
            "-o",
            str(out_dir),
        ],
        node_env(tmp_path),
    )
    summary = ANSI.sub("", r.stdout[r.stdout.find("=== SUMMARY ===") :])
    # exit 1 on a failure missing from the baseline, and on a baseline entry that now passes
    assert r.returncode == 0, f"exit {r.returncode}\n{summary}\nstderr:\n{r.stderr[-4000:]}"
    assert "Baseline check passed" in r.stdout

    baseline = load_baseline()
    expected_failures = set(baseline["server"])
    results = scenario_checks(out_dir)
    assert "server-initialize" in results and "tools-list" in results, sorted(results)
    if spec_version == "2025-11-25":  # every scenario ran: a misspelt baseline entry would show here
        assert expected_failures <= set(results), expected_failures - set(results)

    failed = {
        name for name, checks in results.items() if any(c["status"] in ("FAILURE", "WARNING") for c in checks)
    }
    assert failed == expected_failures & set(results), summary
    for name in failed:  # ... and each fails for the recorded reason, not some other one
        messages = [
            c.get("errorMessage") or "" for c in results[name] if c["status"] in ("FAILURE", "WARNING")
        ]
        reasons = baseline["reasons"][name]
        for reason in [reasons] if isinstance(reasons, str) else reasons:
            assert any(reason in m for m in messages), (name, reason, messages)
    passed = set(results) - failed
    assert passed >= {"server-initialize", "ping", "tools-list", "resources-list", "prompts-list"}
