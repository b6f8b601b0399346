"""Shell prompt detection on real consoles (ESP-IDF ``mdf>``, U-Boot, OpenWrt) and custom regexes."""

from __future__ import annotations

from pathlib import Path

import pytest

from serial_mcp.core.framing import LineDecoder
from serial_mcp.core.parsers import ShellPromptParser, build_parser
from serial_mcp.errors import InvalidArgument

BOOTLOGS = Path(__file__).parents[1] / "data" / "bootlogs"


@pytest.mark.parametrize(
    ("line", "prompt"),
    [
        (b"$ ", "$ "),
        (b"# ", "# "),
        (b"> ", "> "),
        (b"=> ", "=> "),
        (b"root@OpenWrt:/# ", "root@OpenWrt:/# "),
        (b"pi@raspberrypi:~ $ ", "pi@raspberrypi:~ $ "),
        (b"OpenWrt login: ", "OpenWrt login: "),
        (b"Password: ", "Password: "),
        (b"MT7621 # ", "MT7621 # "),
        (b">>> ", ">>> "),
        (b"\x1b[0;32mmdf> \x1b[0m", "mdf> "),
        (b"root@OpenWrt:/# ls -l\r\n", "root@OpenWrt:/#"),
        (b"=> printenv", "=>"),
        (b"uart:~$ ", "uart:~$ "),
        (b"[root@box ~]# ", "[root@box ~]# "),
        (b"U-Boot> ", "U-Boot> "),
    ],
)
def test_default_prompts(line: bytes, prompt: str) -> None:
    parsed = ShellPromptParser().parse(line)
    assert parsed.fields["kind"] == "prompt"
    assert parsed.fields["prompt"] == prompt
    assert parsed.final is True


@pytest.mark.parametrize(
    "line",
    [
        b"[    0.000000] Linux version 4.4.60 (builder@buildhost) (gcc version 5.4.0)",
        b"Hit any key to stop autoboot:  0 ",
        b"I (568) cpu_start: Pro cpu up.",
        b"",
        b"Starting kernel ...",
        b"x" * 200 + b"#",
        b"ApAutoChannelAtBootUp----------------->",
        b"[   31.792871] mt7915_init()-->",
        b"WAN = << WAN_MAC >>",
        b"## Lunching system normally completed! ##",
        b"ap_ftkd> Initialize FT KDP Module...",
    ],
)
def test_ordinary_output(line: bytes) -> None:
    parsed = ShellPromptParser().parse(line)
    assert parsed.fields["kind"] == "output" and parsed.final is False


def test_ansi_colours_are_stripped_from_text() -> None:
    parsed = ShellPromptParser().parse(b"\x1b[0;32mI (568) cpu_start: Pro cpu up.\x1b[0m")
    assert parsed.fields["text"] == "I (568) cpu_start: Pro cpu up."


def test_esp32_console_finds_the_mdf_prompt_with_a_custom_regex() -> None:
    data = (BOOTLOGS / "esp32" / "esp32-mdf-boot.txt").read_bytes()
    decoder = LineDecoder()
    frames = [f for f in decoder.feed(data) + decoder.flush() if hasattr(f, "data")]
    custom = build_parser({"type": "shell_prompt", "prompt": "^mdf> "})
    prompts = [p for f in frames if (p := custom.parse(f.data)).fields["kind"] == "prompt"]
    assert len(prompts) == data.count(b"mdf> ") == 1  # the prompt sits under ANSI colour codes
    assert prompts[0].final
    default = ShellPromptParser()
    assert [f.data for f in frames if default.parse(f.data).fields["kind"] == "prompt"] == []


@pytest.mark.parametrize(
    "name",
    ["openwrt-COVR-X1860/Bootlog.txt", "openwrt-M32/Bootlog.txt", "openwrt-MR6350/BootLog_no_MACs.txt"],
)
def test_boot_logs_have_no_false_prompts(name: str) -> None:
    data = (BOOTLOGS / name).read_bytes()
    decoder = LineDecoder()
    parser = ShellPromptParser()
    frames = decoder.feed(data) + decoder.flush()
    prompts = [
        p.fields["text"]
        for f in frames
        if hasattr(f, "data")
        if (p := parser.parse(f.data)).fields["kind"] == "prompt"
    ]
    assert prompts == []


def test_custom_prompt_regex() -> None:
    parser = build_parser({"type": "shell_prompt", "prompt": r"\[\w+@\w+ \S+\]\$ ?$"})
    assert parser.parse(b"[root@box ~]$ ").fields["kind"] == "prompt"
    assert parser.parse(b"$ ").fields["kind"] == "output"


def test_bad_custom_regex_is_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"rx_parser.prompt is not a valid regular expression"):
        build_parser({"type": "shell_prompt", "prompt": "(unclosed"})
