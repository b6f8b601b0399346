"""Every ``serial-mcp`` command README (and docs/) shows exists and parses, and the short ones on
simulators and sample captures run (issue 42.1); README's test command is the one CI runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from serial_mcp import cli, config

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
RUNS_ON_A_SIMULATOR = frozenset({"send", "read", "decode", "view", "ports"})  # ends by itself, no hardware


def commands_in(path: Path) -> list[tuple[str, bool]]:
    """``(command, shown in a code block)`` for every ``serial-mcp …`` of a Markdown file: lines of its
    shell code blocks and inline code spans (a span with an ellipsis elides arguments: not a command)."""
    text = path.read_text(encoding="utf-8")
    found: list[tuple[str, bool]] = []
    for block in re.findall(r"```(?:bash|sh|console|shell)\n(.*?)```", text, re.S):
        lines = block.replace("\\\n", " ").splitlines()  # a continued line is one command
        found += [(line.strip(), True) for line in lines if line.strip().startswith("serial-mcp ")]
    spans = re.findall(r"`(serial-mcp [^`]+)`", text)
    found += [(span, False) for span in spans if "…" not in span and "..." not in span]
    return found


def argv_of(command: str) -> list[str]:
    """The words after ``serial-mcp``; a synopsis's optional ``[--flag VALUE]`` as if given (N: a number)."""
    given = re.sub(r"\[(--[^\]]*)\]", lambda m: re.sub(r" N$", " 1", m.group(1)), command)
    return shlex.split(given, comments=True)[1:]


README_COMMANDS = commands_in(README)
DOC_COMMANDS = [(c, block) for doc in DOCS for c, block in commands_in(doc)]


def test_readme_shows_commands() -> None:
    blocks = [c for c, block in README_COMMANDS if block]
    assert len(blocks) >= 15 and any("sim://" in c for c in blocks)


@pytest.mark.parametrize(("command", "block"), README_COMMANDS + DOC_COMMANDS, ids=lambda x: str(x)[:60])
def test_the_command_exists_and_its_flags_parse(
    command: str, block: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = argv_of(command)
    parser = cli.build_parser()
    parser.argv = argv
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help exits 0; a usage error exits 2 with one line
        err = capsys.readouterr().err
        # prose names a command or one of its flags (`serial-mcp decode --print-filter`): it must exist
        mention = not block and ("arguments are required" in err or "expected one argument" in err)
        assert exc.code == 0 or mention, (command, err)
        return
    assert cli._serial_port_placed(args), (command, capsys.readouterr().err)
    config.resolve(args, environ={})  # every setting's value is valid


def test_a_bare_command_name_names_a_command() -> None:
    names = set(cli.WRITES_STDOUT) | {"serve", "record", "view"}
    for command, _ in README_COMMANDS:
        words = argv_of(command)
        if words and not words[0].startswith("-"):
            assert words[0] in names, command


def runnable() -> list[str]:
    """README's block commands that run here: on a ``sim://`` port or a sample capture, ending by
    themselves (not the server, a recorder, a mirror, a replay PTY)."""
    out = []
    for command, block in README_COMMANDS:
        argv = argv_of(command)
        if not block or not argv or argv[0] not in RUNS_ON_A_SIMULATOR or "--open" in argv:
            continue
        ports_and_files = [a for a in argv[1:2] if not a.startswith("-")]
        if all(a.startswith("sim://") or (ROOT / a).exists() for a in ports_and_files):
            out.append(command)
    return out


def test_the_short_examples_are_found() -> None:
    shown = runnable()
    assert {argv_of(c)[0] for c in shown} >= {"send", "read", "decode", "view", "ports"}, shown


@pytest.mark.slow
@pytest.mark.parametrize("command", runnable())
def test_the_short_examples_run(command: str, tmp_path: Path) -> None:
    (tmp_path / "captures").symlink_to(ROOT / "captures")  # README's paths are the clone's; outputs land here
    done = subprocess.run(
        [sys.executable, "-m", "serial_mcp", *argv_of(command)],
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert done.returncode == 0, (command, done.stderr[-2000:])
    assert "Traceback" not in done.stderr


def test_readme_test_command_is_the_one_ci_runs() -> None:
    """The second of the "Two commands" stays true: ``.ci/run`` runs it, character for character."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == "python3 -m pip install -e '.[test]' && python3 -m pytest"
    assert f"\n{ci}\n" in README.read_text(encoding="utf-8")


def test_every_doc_is_in_readmes_index() -> None:
    text = README.read_text(encoding="utf-8")
    for doc in DOCS:
        assert f"](docs/{doc.name})" in text, doc.name


def test_readme_shows_the_view_and_the_picture_stays_small() -> None:
    """README's picture of ``serial-mcp view`` (made by tools/make_view_screenshot.py) and its sample page."""
    text = README.read_text(encoding="utf-8")
    for name in ("view-gps.png", "view-gps.html"):
        assert f"(docs/images/{name})" in text, name
        assert (ROOT / "docs" / "images" / name).is_file(), name
    picture = (ROOT / "docs" / "images" / "view-gps.png").read_bytes()
    assert picture.startswith(b"\x89PNG\r\n") and len(picture) < 200_000


def test_every_install_instruction_names_this_project() -> None:
    """Issue 42.2: ``serial-mcp`` on PyPI is another project; the hints name the clone's extra, or the
    very pin that extra installs."""
    import tomllib

    from serial_mcp import messages
    from serial_mcp.serial.labgrid_client import LABGRID_PIN

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "lossless-serial-mcp"
    assert project["optional-dependencies"]["labgrid"] == [f"labgrid=={LABGRID_PIN}"]
    hint = messages.LABGRID_NOT_INSTALLED.format(version=LABGRID_PIN, error="x")
    assert "pip install '.[labgrid]'" in hint and f"pip install 'labgrid=={LABGRID_PIN}'" in hint
    for doc in [README, *DOCS]:
        assert "serial-mcp[" not in doc.read_text(encoding="utf-8"), doc.name
