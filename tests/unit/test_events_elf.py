"""Issue 24.3 on a live connection: ``open(elf=...)`` / ``configure(..., {"elf": ...})`` decode a detected
backtrace into ``function at file:line`` (what binutils' addr2line says for the same ELF, built here with
gcc -g), under the replay file rules plus ``firmware_dirs``; a bad ELF is a clean error; the CLI's
``decode --events`` finds the same events offline.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from serial_mcp import Engine
from serial_mcp.commands.decode import run_events
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.fake import FakeOpener
from tests.elf_build import build_app_elf

pytestmark = pytest.mark.anyio

@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_app_elf(tmp_path_factory.mktemp("fw"), "addr2line")


def _address(elf: Path, function: str) -> int:
    out = subprocess.run(["nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[0], 16) for line in out.splitlines() if line.endswith(" " + function))


def _addr2line(elf: Path, address: int) -> str:
    out = subprocess.run(
        ["addr2line", "-f", "-e", str(elf), hex(address)], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return f"{out[0]} at {out[1].split(' ')[0]}"


def _panic(pc: int, caller: int) -> bytes:
    return (
        b"Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.\r\n"
        + f"PC      : 0x{pc:08x}  PS      : 0x00060330  A0      : 0x800d0b6c\r\n".encode()
        + f"Backtrace: 0x{pc:08x}:0x3ffb5c30 0x{caller:08x}:0x3ffb5c50\r\n".encode()
        + b"\r\nRebooting...\r\n"
        + b"ets Jun  8 2016 00:22:57\r\n\r\nrst:0xc (SW_CPU_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)\r\n"
    )


async def test_open_with_an_elf_decodes_the_backtrace_as_addr2line_does(
    program: Path, tmp_path: Path
) -> None:
    captures = tmp_path / "captures"
    captures.mkdir()
    shutil.copy(program, captures / "app.elf")
    pc, caller = _address(program, "crash_here") + 2, _address(program, "app_main") + 4
    opener = FakeOpener()
    device = opener.add("/dev/esp")
    async with Engine(opener=opener, capture_dir=captures) as engine:
        conn = await engine.open("/dev/esp", elf="app.elf")
        device.feed(_panic(pc, caller))
        r = await conn.read(until=["crash"], timeout_ms=5000)
        assert r.stop_reason == "event"
        crash = next(e for e in r.events or [] if e["kind"] == "crash")
        assert crash["where"] == _addr2line(program, pc)
        assert crash["where"].startswith("crash_here at ") and crash["where"].endswith("main.c:2")
        assert r.summary().startswith("⚠ crash at offset 0: Guru Meditation Error")
        assert f" — {_addr2line(program, pc)}" in r.summary().splitlines()[0]
        full = conn.events()[0]
        assert full["frames"][f"0x{caller:08x}"] == [_addr2line(program, caller)]
        assert conn.status().events["elf"] == str((captures / "app.elf").resolve())  # type: ignore[index]


async def test_configure_sets_the_elf_of_a_live_connection_and_a_bad_one_changes_nothing(
    program: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    shutil.copy(program, build / "app.elf")
    (build / "app.bin").write_bytes(b"\xe9\x03\x02\x20" + bytes(60))
    opener = FakeOpener()
    device = opener.add("/dev/esp")
    async with Engine(opener=opener, capture_dir=tmp_path / "captures", firmware_dirs=[build]) as engine:
        conn = await engine.open("/dev/esp")
        with pytest.raises(SerialMcpError) as bad:
            await engine.configure({"elf": str(build / "app.bin")}, connection_id=conn.id)
        assert bad.value.code == "invalid_argument" and "not an ELF" in bad.value.message
        with pytest.raises(SerialMcpError) as outside:
            await engine.configure({"elf": str(program)}, connection_id=conn.id)  # not under a firmware dir
        assert outside.value.code == "not_allowed"
        assert conn.status().events.get("elf") is None  # type: ignore[union-attr]
        await engine.configure({"elf": "app.elf"}, connection_id=conn.id)
        pc = _address(program, "crash_here") + 2
        device.feed(_panic(pc, pc))
        r = await conn.read(until=["crash"], timeout_ms=5000)
        assert next(e for e in r.events or [] if e["kind"] == "crash")["where"] == _addr2line(program, pc)


async def test_open_refuses_an_elf_outside_the_file_rules_before_touching_the_port(
    program: Path, tmp_path: Path
) -> None:
    opener = FakeOpener()
    device = opener.add("/dev/esp")
    async with Engine(opener=opener, capture_dir=tmp_path) as engine:
        with pytest.raises(SerialMcpError) as refused:
            await engine.open("/dev/esp", elf=str(program))
        assert refused.value.code == "not_allowed" and "--firmware-dir" in refused.value.message
        assert device.opens == 0


def test_decode_events_lists_the_events_of_a_capture_offline() -> None:
    data = (Path(__file__).parent.parent / "data" / "crashes" / "esp32c3-panics.txt").read_bytes()
    out = io.StringIO()
    assert run_events([(0.0, data[:4000]), (0.5, data[4000:])], "text", out) == 0
    lines = out.getvalue().splitlines()
    assert "crash at offset 637: abort() was called at PC 0x42003863" in lines[1]
    assert sum("crash at offset" in line for line in lines) == 2


def test_the_server_flags_give_the_elf_rules(
    program: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--firmware-dir (repeatable) and the allowlist's replay:// patterns admit ELFs; a link out of an
    admitted directory does not (judged on real paths); the refusal is the same whatever is there."""
    import argparse

    from serial_mcp import config
    from serial_mcp.serial.firmware_elf import load_elf

    build, other, captures = tmp_path / "build", tmp_path / "other", tmp_path / "captures"
    for d in (build, other, captures):
        d.mkdir()
    shutil.copy(program, build / "app.elf")
    shutil.copy(program, other / "listed.elf")
    (captures / "link.elf").symlink_to(other / "listed.elf")
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    config.add_options(parser)
    args = parser.parse_args(
        [
            "--firmware-dir",
            str(build),
            "--firmware-dir",
            str(tmp_path / "none"),
            "--allowlist",
            "/dev/ttyUSB*",
        ]
    )
    scope = config.port_policy(config.resolve(args, environ={})).elf_scope()
    assert load_elf("app.elf", scope).path == str((build / "app.elf").resolve())  # found in the firmware dir
    for name in (
        str(other / "listed.elf"),
        str(captures / "link.elf"),
        str(other / "none.elf"),
        "../other/listed.elf",
    ):
        with pytest.raises(SerialMcpError) as refused:
            load_elf(name, scope)
        assert refused.value.code == "not_allowed", name
    answers = []
    for name in ("link.elf", "nothing.elf"):  # a relative name: a link out answers as nothing there does
        with pytest.raises(SerialMcpError) as refused:
            load_elf(name, scope)
        answers.append((refused.value.code, refused.value.message.replace(name, "NAME")))
    assert answers[0] == answers[1]
    args = parser.parse_args(["--allowlist", f"replay://{other}/*.elf"])
    listed = config.port_policy(config.resolve(args, environ={})).elf_scope()
    assert load_elf(str(other / "listed.elf"), listed).symbols.has_dwarf


def test_decode_refuses_events_with_a_print_filter(tmp_path: Path) -> None:
    """--events lists events, --print-filter filters frames: together, one would be dropped in silence."""
    from serial_mcp.commands.decode import run_decode

    capture = tmp_path / "boot.txt"
    capture.write_bytes(b"I (12) boot: hi\n")
    with pytest.raises(SerialMcpError) as refused:
        run_decode(str(capture), None, None, None, "text", "both", io.StringIO(), events=True, print_filter="*:E")
    assert refused.value.code == "invalid_argument" and "--print-filter" in refused.value.message
