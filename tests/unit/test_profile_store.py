"""ProfileStore in one process: schema, validation, CAS, history, rollback, comment-preserving
writes and failure atomicity (a failed mutation leaves the file byte-identical)."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
import threading
import tomllib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import filelock
import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp import messages
from serial_mcp.core.profile_model import (
    HISTORY_LIMIT,
    Profile,
    ProfileStoreError,
    same,
    validate_defaults,
    validate_name,
)
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial.ports import PortInfo
from serial_mcp.store import profile_toml
from serial_mcp.store import profiles as store_module
from serial_mcp.store.profiles import PROFILES_ENV, ProfileStore, default_profiles_path, resolve_profiles_path

FTDI = {"vid": "0403", "pid": "6001", "serial_number": "A10K3Z"}
FULL_SELECTOR = {
    "vid": "0403",
    "pid": "6001",
    "serial_number": "A10K3Z",
    "manufacturer": "FTDI",
    "product": "FT232R USB UART",
    "interface": "FT232R USB UART",
    "port_glob": "/dev/ttyUSB*",
    "description_glob": "*ft232r*",
}
FULL_DEFAULTS: dict[str, Any] = {
    "baud_rate": 9600,
    "data_bits": 7,
    "parity": "even",
    "stop_bits": 1.5,
    "flow_control": "hardware",
    "protocol": "nmea",
    "rx_framing": {"type": "line", "ending": "auto", "max_length": 4096},
    "tx_framing": {"type": "line", "ending": "crlf"},
    "rx_parser": {"type": "nmea", "talkers": ["GP", "GN"], "checksum": True},
    "rx_buffer_size": 65536,
    "reconnect": {"max_attempts": 5, "initial_delay_ms": 100, "max_delay_ms": 2000, "backoff": 1.5},
    "pace": {"inter_byte_us": 0, "inter_line_ms": 20},
}


class Clock:
    """A clock that ticks one second per reading, so every timestamp is distinct and predictable."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "config" / "serial-mcp" / "profiles.toml"


@pytest.fixture
def store(path: Path) -> ProfileStore:
    return ProfileStore(path, clock=Clock())


def temps(directory: Path) -> list[str]:
    return (
        sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp")) if directory.exists() else []
    )


def code_of(exc: pytest.ExceptionInfo[SerialMcpError]) -> str:
    return exc.value.code


# --- paths -----------------------------------------------------------------------------------------


def test_default_path_is_in_the_user_config_dir() -> None:
    p = default_profiles_path()
    assert p.name == "profiles.toml" and p.parent.name == "serial-mcp" and p.is_absolute()


def test_path_precedence_is_flag_then_env_then_default(tmp_path: Path) -> None:
    flag, env = tmp_path / "flag.toml", tmp_path / "env.toml"
    assert resolve_profiles_path(str(flag), {PROFILES_ENV: str(env)}) == flag
    assert resolve_profiles_path(None, {PROFILES_ENV: str(env)}) == env
    assert resolve_profiles_path("", {PROFILES_ENV: ""}) == default_profiles_path()
    assert resolve_profiles_path(None, {}) == default_profiles_path()
    assert resolve_profiles_path("~/p.toml", {}) == Path.home() / "p.toml"
    assert resolve_profiles_path("rel.toml", {}).is_absolute()


# --- loading -----------------------------------------------------------------------------------------


def test_missing_file_is_an_empty_store_and_nothing_is_created(store: ProfileStore, path: Path) -> None:
    store.load()
    assert store.list() == [] and store.get("x") is None
    assert not path.parent.exists()


def test_first_write_creates_the_directory_and_a_versioned_file(store: ProfileStore, path: Path) -> None:
    store.create("bench", FTDI, {"baud_rate": 9600})
    text = path.read_text(encoding="utf-8")
    assert text.startswith(messages.PROFILE_FILE_HEADER)
    data = tomllib.loads(text)
    assert data["schema_version"] == 1
    assert data["profiles"]["bench"]["selector"] == FTDI
    assert temps(path.parent) == []


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# and another\n"])
def test_empty_or_comment_only_file_is_an_empty_store(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(text)
    store = ProfileStore(path)
    assert store.list() == []
    store.create("bench", FTDI, {})
    out = path.read_text()
    assert out.startswith(text) and tomllib.loads(out)["schema_version"] == 1


BAD_FILES: dict[str, tuple[str | bytes, str]] = {
    "version 0": ("schema_version = 0\n", "schema_version 0"),
    "version 2": ("schema_version = 2\n[profiles.x.selector]\nvid = '0403'\n", "newer than this serial-mcp"),
    "version string": ('schema_version = "1"\n', "schema_version '1'"),
    "version bool": ("schema_version = true\n", "schema_version True"),
    "no version": ("[profiles.x.selector]\nvid = '0403'\n", "no schema_version"),
    "not toml": ("schema_version = 1\n[profiles.x\n", "not valid TOML"),
    "duplicate key": ("schema_version = 1\nschema_version = 1\n", "not valid TOML"),
    "not utf-8": (b"schema_version = 1\n# \xff\xfe\n", "not UTF-8"),
    "unknown top key": ("schema_version = 1\nprofile = 3\n", "unknown key 'profile'"),
    "bad baud": (
        "schema_version = 1\n[profiles.x.selector]\nvid = '0403'\n[profiles.x.defaults]\nbaud_rate = -5\n",
        "profiles.x",
    ),
    "bad name": ("schema_version = 1\n[profiles.'-x'.selector]\nvid = '0403'\n", "profile name '-x'"),
    "no selector": ("schema_version = 1\n[profiles.x.defaults]\nbaud_rate = 9600\n", "selector is missing"),
    "empty selector": ("schema_version = 1\n[profiles.x.selector]\n", "selector is empty"),
    "unknown profile key": (
        "schema_version = 1\n[profiles.x]\nselectr = {vid = '0403'}\n",
        "Did you mean 'selector'",
    ),
    "history too new": (
        "schema_version = 1\n[profiles.x]\nselector = {vid = '0403'}\nmetadata = {revision = 2}\n"
        "history = [{revision = 2, selector = {vid = '0403'}}]\n",
        "not older than the current revision 2",
    ),
    "bad time": (
        "schema_version = 1\n[profiles.x]\nselector = {vid = '0403'}\nmetadata = {created = 12}\n",
        "metadata.created must be a date-time",
    ),
    # Too deep for the TOML parser itself (it recurses): not "maximum recursion depth exceeded".
    "nested arrays": ("schema_version = 1\nx = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    "nested tables": (
        "schema_version = 1\nx = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",
        "nested too deeply",
    ),
    # Parses, but no profile setting is nested like this.
    "deep parser config": (
        "schema_version = 1\n[profiles.x]\nselector = {vid = '0403'}\n"
        "defaults = {rx_parser = {k = " + "[" * 100 + "]" * 100 + "}}\n",
        "levels deep",
    ),
}


@pytest.mark.parametrize("case", ["nested arrays", "nested tables"])
def test_deep_nesting_is_refused_whatever_the_recursion_limit(path: Path, case: str) -> None:
    """Another library in the process (mypy's in-process API does) may have raised the recursion
    limit; the refusal must not depend on it (CI saw "unknown key 'x'" instead)."""
    content, expected = BAD_FILES[case]
    assert isinstance(content, str)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(ProfileStoreError) as exc:
            ProfileStore(path, lock_timeout=2).load()
    finally:
        sys.setrecursionlimit(old)
    assert expected in exc.value.message


def test_nesting_depth_skips_strings_and_comments() -> None:
    assert store_module.nesting_depth("a = \"[[[[{{\"\nb = '[[['  # [[[[\n[t]\nc = [[1], {x = [2]}]\n") == 3
    assert store_module.nesting_depth('s = """ [[[ \\" ]]] """ [x]\n') == 1


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_invalid_file_is_refused_with_one_line_and_never_modified(path: Path, case: str) -> None:
    content, expected = BAD_FILES[case]
    raw = content if isinstance(content, bytes) else content.encode()
    path.parent.mkdir(parents=True)
    path.write_bytes(raw)
    store = ProfileStore(path, lock_timeout=2)
    with pytest.raises(ProfileStoreError) as exc:
        store.load()
    assert exc.value.code == "profile_store_invalid"
    assert expected in exc.value.message and str(path) in exc.value.message
    assert "\n" not in exc.value.message and "not modified" in exc.value.message
    mutations: list[Callable[[], object]] = [
        lambda: store.create("y", FTDI, {}),
        lambda: store.save("x", FTDI, {}, overwrite=True),
        lambda: store.delete("x"),
    ]
    for mutate in mutations:
        with pytest.raises(ProfileStoreError):
            mutate()
    with pytest.raises(ProfileStoreError):
        store.list()
    assert path.read_bytes() == raw
    assert temps(path.parent) == []


def test_deeply_nested_settings_from_a_client_are_refused_not_a_crash(
    store: ProfileStore, path: Path
) -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = {"a": deep}
    for defaults in ({"rx_parser": deep}, {"pace": deep}, {"reconnect": deep}):
        with pytest.raises(InvalidArgument) as exc:
            store.create("deep", FTDI, defaults)
        assert "levels deep" in exc.value.message and len(exc.value.message) < 1000
    assert not path.exists()


def test_unreadable_path_is_refused(path: Path) -> None:
    path.mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(ProfileStoreError) as exc:
        ProfileStore(path).load()
    assert "cannot read the profiles file" in exc.value.message and "\n" not in exc.value.message


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="needs POSIX permissions, not root")
def test_unreadable_permissions_are_refused(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text("schema_version = 1\n")
    path.chmod(0)
    try:
        with pytest.raises(ProfileStoreError):
            ProfileStore(path).load()
    finally:
        path.chmod(0o600)


# --- round trip ---------------------------------------------------------------------------------------


def test_schema_round_trip_through_a_fresh_store(store: ProfileStore, path: Path) -> None:
    made = store.create("bench.gps-1", FULL_SELECTOR, FULL_DEFAULTS, generated=True)
    assert made.revision == 1 and made.generated and made.use_count == 0 and made.last_used is None
    assert made.created == made.updated and made.history == ()
    changed = store.update("bench.gps-1", expected_revision=1, defaults={"baud_rate": 4800})
    used = store.touch_used("bench.gps-1")
    reread = ProfileStore(path).get("bench.gps-1")
    assert reread == used
    assert reread is not None and reread.defaults == {**FULL_DEFAULTS, "baud_rate": 4800}
    assert reread.selector == FULL_SELECTOR and reread.generated
    assert reread.history[0].defaults == FULL_DEFAULTS and reread.history[0].updated == made.updated
    assert changed.revision == reread.revision == 2 and reread.use_count == 1
    as_json = json.loads(json.dumps(reread.as_dict()))
    assert as_json["metadata"]["revision"] == 2 and as_json["metadata"]["last_used"].endswith("Z")
    assert as_json["history"][0]["revision"] == 1 and as_json["defaults"]["rx_parser"]["talkers"] == [
        "GP",
        "GN",
    ]


def test_values_are_normalized(store: ProfileStore) -> None:
    p = store.create(
        "n",
        {"vid": "0x403", "pid": 0x6001, "serial_number": "A1"},
        {"parity": "E", "stop_bits": 2.0, "rx_framing": {"type": "line", "ending": None}},
    )
    assert p.selector == {"vid": "0403", "pid": "6001", "serial_number": "A1"}
    assert p.defaults == {"parity": "even", "stop_bits": 2, "rx_framing": {"type": "line"}}
    assert isinstance(p.defaults["stop_bits"], int)


def test_snapshots_are_copies(store: ProfileStore) -> None:
    store.create("c", FTDI, {"rx_framing": {"type": "line"}})
    got = store.get("c")
    assert got is not None
    got.defaults["rx_framing"]["type"] = "slip"
    got.selector["vid"] = "ffff"
    again = store.get("c")
    assert again is not None and again.defaults["rx_framing"] == {"type": "line"} and again.selector == FTDI


def test_awkward_strings_and_keys_round_trip(store: ProfileStore, path: Path) -> None:
    product = 'He said "hi"\\ \t\n\x7f ünï€ode 🙂'
    parser = {"type": "custom", "a b": {"x.y": [1, 2.5, True, "z"]}, "": "empty key", "nan": float("inf")}
    store.create("x.y", {"product": product}, {"rx_parser": parser})
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data["profiles"]["x.y"]["selector"]["product"] == product
    reread = ProfileStore(path).get("x.y")
    assert (
        reread is not None
        and reread.selector["product"] == product
        and reread.defaults["rx_parser"] == parser
    )


# --- validation --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "A", "9", "bench.gps_1-x", "a" * 64, "auto-ft232r-a10k3z"])
def test_valid_names(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", ["", "-a", ".a", "_a", "a b", "a/b", "a" * 65, "é", "a\n", None, 3])
def test_invalid_names(store: ProfileStore, name: Any) -> None:
    with pytest.raises(SerialMcpError) as exc:
        store.create(name, FTDI, {})
    assert exc.value.code == "invalid_argument" and "profile name" in exc.value.message


@pytest.mark.parametrize(
    ("selector", "defaults", "fragment"),
    [
        ({}, {}, "selector is empty"),
        ({"vid": None}, {}, "selector is empty"),
        ({"serial": "A1"}, {}, "Did you mean 'serial_number'"),
        ({"vid": "xyz"}, {}, "not a USB id"),
        ({"vid": 70000}, {}, "not a USB id"),
        ({"serial_number": ""}, {}, "non-empty string"),
        ({"product": 5}, {}, "non-empty string"),
        ("0403", {}, "selector must be an object"),
        (FTDI, {"baudrate": 9600}, "Did you mean 'baud_rate'"),
        (FTDI, {"baud_rate": 0}, "baud_rate 0 is not valid"),
        (FTDI, {"baud_rate": True}, "baud_rate True"),
        (FTDI, {"data_bits": 8.0}, "data_bits 8.0"),
        (FTDI, {"parity": "x"}, "parity 'x'"),
        (FTDI, {"stop_bits": 3}, "stop_bits 3"),
        (FTDI, {"flow_control": "rtscts"}, "flow_control 'rtscts'"),
        (FTDI, {"protocol": 7}, "protocol preset name"),
        (FTDI, {"rx_framing": "line"}, "defaults.rx_framing must be an object"),
        (FTDI, {"rx_parser": {"bad": object()}}, "cannot store"),
        (FTDI, {"rx_parser": {"list": [1, None]}}, "cannot store"),
        (FTDI, {"rx_parser": {"big": 2**70}}, "cannot store"),
        (FTDI, {"rx_parser": {"s": "\ud800"}}, "cannot store"),
        (FTDI, {"rx_buffer_size": 10}, "rx_buffer_size 10 is out of range"),
        (FTDI, {"reconnect": "yes"}, "reconnect policy object"),
        (FTDI, {"reconnect": {"tries": 3}}, "unknown key 'tries'"),
        (FTDI, {"pace": {"inter_line_ms": -1}}, "pace values"),
        (FTDI, [], "defaults must be an object"),
    ],
)
def test_bad_selector_or_defaults_are_invalid_arguments(
    store: ProfileStore, path: Path, selector: Any, defaults: Any, fragment: str
) -> None:
    with pytest.raises(SerialMcpError) as exc:
        store.create("v", selector, defaults)
    assert exc.value.code == "invalid_argument"
    assert fragment in exc.value.message
    assert not path.exists()


def test_defaults_validation_keeps_only_given_fields() -> None:
    assert validate_defaults({"baud_rate": 9600, "parity": None}) == {"baud_rate": 9600}
    assert validate_defaults({"reconnect": False, "protocol": "raw"}) == {
        "protocol": "raw",
        "reconnect": False,
    }


# --- create / save / delete --------------------------------------------------------------------------


def test_create_refuses_an_existing_name(store: ProfileStore) -> None:
    store.create("dup", FTDI, {})
    with pytest.raises(SerialMcpError) as exc:
        store.create("dup", FTDI, {"baud_rate": 9600})
    assert exc.value.code == "profile_exists" and "revision 1" in exc.value.message


def test_save_creates_then_needs_overwrite(store: ProfileStore) -> None:
    first = store.save("s", FTDI, {"baud_rate": 9600}, overwrite=False)
    assert first.revision == 1 and not first.generated
    with pytest.raises(SerialMcpError) as exc:
        store.save("s", FTDI, {"baud_rate": 4800}, overwrite=False)
    assert exc.value.code == "profile_exists" and "overwrite: true" in exc.value.message
    second = store.save("s", FTDI, {"baud_rate": 4800}, overwrite=True, expected_revision=1)
    assert second.revision == 2 and second.defaults == {"baud_rate": 4800}
    with pytest.raises(SerialMcpError) as conflict:
        store.save("s", FTDI, {"baud_rate": 2400}, overwrite=True, expected_revision=1)
    assert conflict.value.code == "revision_conflict"
    same = store.save("s", FTDI, {"baud_rate": 4800}, overwrite=True)
    assert same.revision == 2  # nothing changed, nothing written


def test_save_over_a_generated_profile_makes_it_user_owned(store: ProfileStore) -> None:
    store.create("auto-x", FTDI, {"baud_rate": 9600}, generated=True)
    saved = store.save("auto-x", FTDI, {"baud_rate": 9600}, overwrite=True)
    assert saved.revision == 2 and not saved.generated


def test_save_with_expected_revision_on_a_deleted_profile_conflicts(store: ProfileStore) -> None:
    with pytest.raises(SerialMcpError) as exc:
        store.save("gone", FTDI, {}, overwrite=True, expected_revision=3)
    assert exc.value.code == "revision_conflict" and "no longer exists" in exc.value.message


def test_delete_returns_the_profile_and_checks_the_revision(store: ProfileStore, path: Path) -> None:
    store.create("a", FTDI, {})
    store.create("b", {"port_glob": "/dev/ttyS0"}, {})
    with pytest.raises(SerialMcpError) as conflict:
        store.delete("a", expected_revision=2)
    assert conflict.value.code == "revision_conflict"
    gone = store.delete("a", expected_revision=1)
    assert gone.name == "a" and store.get("a") is None
    with pytest.raises(SerialMcpError) as missing:
        store.delete("a")
    assert missing.value.code == "profile_not_found" and "saved profiles: b" in missing.value.message
    store.delete("b")
    assert store.list() == [] and tomllib.loads(path.read_text()) == {"schema_version": 1}
    store.create("c", FTDI, {})
    assert [p.name for p in store.list()] == ["c"]


# --- update, CAS, history, rollback ------------------------------------------------------------------


def test_partial_update_changes_only_the_given_fields(store: ProfileStore) -> None:
    store.create("p", FTDI, {"baud_rate": 9600, "parity": "even", "rx_framing": {"type": "line"}})
    p = store.update("p", expected_revision=1, defaults={"baud_rate": 19200, "parity": None})
    assert p.defaults == {"baud_rate": 19200, "parity": "even", "rx_framing": {"type": "line"}}
    p = store.update("p", expected_revision=2, defaults={"rx_framing": {"type": "slip"}}, unset=["parity"])
    assert p.defaults == {"baud_rate": 19200, "rx_framing": {"type": "slip"}} and p.selector == FTDI
    p = store.update("p", expected_revision=3, selector={"port_glob": "/dev/ttyUSB*"})
    assert p.selector == {"port_glob": "/dev/ttyUSB*"} and p.revision == 4
    p = store.update("p", expected_revision=4, defaults={"stop_bits": 2}, replace=True)
    assert p.defaults == {"stop_bits": 2} and p.revision == 5


def test_update_argument_errors(store: ProfileStore) -> None:
    store.create("p", FTDI, {"baud_rate": 9600})
    for kwargs, fragment in (
        ({"defaults": {"baud_rate": 1}, "unset": ["baud_rate"]}, "both given and unset"),
        ({"unset": ["speed"]}, "unknown key 'speed'"),
        ({"replace": True}, "replace needs defaults"),
        ({"expected_revision": 0}, "expected_revision must be a whole number"),
        ({"expected_revision": True}, "expected_revision must be a whole number"),
    ):
        args: dict[str, Any] = {"expected_revision": None, **kwargs}
        with pytest.raises(SerialMcpError) as exc:
            store.update("p", **args)
        assert exc.value.code == "invalid_argument" and fragment in exc.value.message, kwargs
    with pytest.raises(SerialMcpError) as missing:
        store.update("nope", expected_revision=None, defaults={"baud_rate": 1})
    assert missing.value.code == "profile_not_found"
    with pytest.raises(SerialMcpError) as gone:
        store.update("nope", expected_revision=4, defaults={"baud_rate": 1})
    assert gone.value.code == "revision_conflict"


def test_noop_update_writes_nothing(store: ProfileStore, path: Path) -> None:
    store.create("p", FTDI, {"baud_rate": 9600})
    before = path.read_bytes()
    same = store.update("p", expected_revision=1, defaults={"baud_rate": 9600}, selector=dict(FTDI))
    assert same.revision == 1 and path.read_bytes() == before


def test_cas_conflict_names_both_revisions_and_writes_nothing(store: ProfileStore, path: Path) -> None:
    store.create("p", FTDI, {"baud_rate": 9600})
    other = ProfileStore(path)  # a second session (same file)
    stale = store.get("p")
    assert stale is not None
    other.update("p", expected_revision=1, defaults={"baud_rate": 4800})
    before = path.read_bytes()
    with pytest.raises(SerialMcpError) as exc:
        store.update("p", expected_revision=stale.revision, defaults={"baud_rate": 19200})
    assert exc.value.code == "revision_conflict"
    assert exc.value.details == {"profile": "p", "current_revision": 2, "expected_revision": 1}
    assert "revision 2, not the expected revision 1" in exc.value.message
    assert path.read_bytes() == before
    fresh = store.get("p")  # reads see the other session's write
    assert fresh is not None and fresh.revision == 2 and fresh.defaults == {"baud_rate": 4800}
    merged = store.update("p", expected_revision=None, defaults={"parity": "odd"})
    assert merged.defaults == {"baud_rate": 4800, "parity": "odd"} and merged.revision == 3


def test_history_keeps_the_five_previous_revisions(store: ProfileStore, path: Path) -> None:
    store.create("h", FTDI, {"baud_rate": 1200})
    for i in range(8):
        p = store.update("h", expected_revision=i + 1, defaults={"baud_rate": 1201 + i})
    assert p.revision == 9 and len(p.history) == HISTORY_LIMIT
    assert [h.revision for h in p.history] == [4, 5, 6, 7, 8]
    assert [h.defaults["baud_rate"] for h in p.history] == [1203, 1204, 1205, 1206, 1207]
    assert all(h.selector == FTDI for h in p.history)
    times = [h.updated for h in p.history if h.updated is not None]
    assert len(times) == HISTORY_LIMIT and times == sorted(times)
    assert p.updated is not None and p.updated > times[-1]
    assert len(tomllib.loads(path.read_text())["profiles"]["h"]["history"]) == HISTORY_LIMIT


def test_rollback_restores_a_retained_revision_as_a_new_revision(store: ProfileStore) -> None:
    store.create("r", FTDI, {"baud_rate": 9600, "parity": "even"})
    store.update("r", expected_revision=1, defaults={"baud_rate": 4800}, unset=["parity"])
    store.update("r", expected_revision=2, selector={"port_glob": "/dev/x"})
    back = store.rollback("r", to_revision=1, expected_revision=3)
    assert back.revision == 4
    assert back.selector == FTDI and back.defaults == {"baud_rate": 9600, "parity": "even"}
    assert [h.revision for h in back.history] == [1, 2, 3]
    with pytest.raises(SerialMcpError) as conflict:
        store.rollback("r", to_revision=2, expected_revision=3)
    assert conflict.value.code == "revision_conflict"
    with pytest.raises(SerialMcpError) as current:
        store.rollback("r", to_revision=4, expected_revision=4)
    assert (
        current.value.code == "invalid_argument" and "already the current revision" in current.value.message
    )
    for _ in range(5):
        latest = store.get("r")
        assert latest is not None
        store.update("r", expected_revision=latest.revision, defaults={"baud_rate": latest.revision * 100})
    with pytest.raises(SerialMcpError) as dropped:
        store.rollback("r", to_revision=1, expected_revision=9)
    assert dropped.value.code == "invalid_argument"
    assert "retained revisions: 4, 5, 6, 7, 8" in dropped.value.message


def test_touch_used_is_not_a_revision(store: ProfileStore) -> None:
    store.create("t", FTDI, {})
    first = store.touch_used("t")
    second = store.touch_used("t")
    assert (first.use_count, second.use_count) == (1, 2)
    assert second.revision == 1 and second.history == ()
    assert first.last_used is not None and second.last_used is not None and second.last_used > first.last_used
    assert store.update("t", expected_revision=1, defaults={"baud_rate": 9600}).revision == 2


def test_find_matches_most_recently_used_first(store: ProfileStore) -> None:
    port = PortInfo(
        "/dev/ttyUSB0",
        "FT232R USB UART",
        None,
        "0403",
        "6001",
        "A10K3Z",
        "FTDI",
        "FT232R",
        None,
        "1-1",
        "usb",
    )
    store.create("by-serial", FTDI, {})
    store.create("by-glob", {"port_glob": "/dev/ttyUSB*"}, {})
    store.create("other", {"serial_number": "ZZZ"}, {})
    assert [p.name for p in store.find_matches(port)] == ["by-glob", "by-serial"]  # newer update first
    store.touch_used("by-serial")
    assert [p.name for p in store.find_matches(port)] == ["by-serial", "by-glob"]


@pytest.mark.slow
def test_threads_in_one_process_lose_no_update(path: Path) -> None:
    ProfileStore(path).create("n", FTDI, {"baud_rate": 1000})
    stores = [ProfileStore(path), ProfileStore(path)]

    def bump(store: ProfileStore) -> None:
        for _ in range(15):
            while True:
                cur = store.get("n")
                assert cur is not None
                try:
                    store.update(
                        "n",
                        expected_revision=cur.revision,
                        defaults={"baud_rate": cur.defaults["baud_rate"] + 1},
                    )
                    break
                except SerialMcpError as exc:
                    assert exc.code == "revision_conflict"

    threads = [threading.Thread(target=bump, args=(stores[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = ProfileStore(path).get("n")
    assert final is not None and final.defaults["baud_rate"] == 1060 and final.revision == 61


# --- hand-edited files: comments and order survive --------------------------------------------------

HAND_WRITTEN = """\
# My bench devices -- edited by hand.
schema_version = 1

# The GPS puck on the left USB hub.
[profiles.gps.selector]
serial_number = "GPS-001"   # printed on the label
vid = "1546"
pid = "01a7"

[profiles.gps.defaults]
parity = "none"   # parity before baud, on purpose
baud_rate = 9600
rx_framing = { type = "line", ending = "auto" }  # NMEA sentences

# A bare console profile written without metadata.
[profiles.console]
selector = { port_glob = "/dev/ttyS0" }
defaults = { baud_rate = 115200 }

# Scratch profile, may be deleted.
[profiles.scratch.selector]
vid = "ffff"

# trailing comment at the end of the file
"""

COMMENTS = [line.split("#", 1)[1] for line in HAND_WRITTEN.splitlines() if "#" in line]


def assert_comments_kept(path: Path, *, except_scratch: bool = False) -> str:
    text = path.read_text(encoding="utf-8")
    for comment in COMMENTS:
        if except_scratch and "Scratch" in comment:
            continue
        assert comment in text, comment
    tomllib.loads(text)
    return text


@pytest.mark.slow
def test_comments_and_key_order_survive_every_kind_of_write(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    store = ProfileStore(path, clock=Clock())
    gps = store.get("gps")
    console = store.get("console")
    assert gps is not None and gps.revision == 1 and gps.created is None and gps.use_count == 0
    assert console is not None and console.defaults == {"baud_rate": 115200}

    store.update("gps", expected_revision=1, defaults={"baud_rate": 4800})
    text = assert_comments_kept(path)
    assert text.index('parity = "none"') < text.index("baud_rate = 4800")  # order kept
    assert text.index('serial_number = "GPS-001"') < text.index('vid = "1546"')
    store.touch_used("gps")
    store.create("new", {"vid": "0403"}, {"baud_rate": 57600})
    store.update("console", expected_revision=1, defaults={"parity": "odd"})
    for i in range(6):
        store.update("gps", expected_revision=2 + i, defaults={"baud_rate": 1200 + i})
    store.rollback("gps", to_revision=4, expected_revision=8)
    store.delete("scratch")
    text = assert_comments_kept(path, except_scratch=True)
    assert "Scratch" not in text
    assert text.startswith("# My bench devices -- edited by hand.\nschema_version = 1\n")

    fresh = ProfileStore(path)
    gps2, console2, new = fresh.get("gps"), fresh.get("console"), fresh.get("new")
    assert gps2 is not None and console2 is not None and new is not None
    assert gps2.revision == 9 and [h.revision for h in gps2.history] == [4, 5, 6, 7, 8]
    assert gps2.defaults["baud_rate"] == 1201  # revision 4 = second of the 1200+i updates
    assert gps2.use_count == 1 and gps2.last_used is not None
    assert console2.revision == 2 and console2.defaults == {"baud_rate": 115200, "parity": "odd"}
    assert console2.history[0].revision == 1 and console2.history[0].updated is None
    assert new.defaults == {"baud_rate": 57600}


@pytest.mark.slow
def test_comments_above_a_header_stay_with_it(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    store = ProfileStore(path, clock=Clock())
    console_head = "# A bare console profile written without metadata.\n[profiles.console]\n"
    store.update("gps", expected_revision=1, defaults={"stop_bits": 2})  # adds metadata + history tables
    text = path.read_text()
    assert console_head in text
    assert "# NMEA sentences\nstop_bits = 2\n\n[profiles.gps.metadata]" in text
    store.create("new", {"vid": "0403"}, {})  # appended at the end: the end-of-file comment stays last
    assert path.read_text().endswith("generated = false\n\n# trailing comment at the end of the file\n")
    store.delete("scratch")  # its own comment goes with it
    text = path.read_text()
    assert "Scratch" not in text and "[profiles.new.selector]" in text
    store.delete("gps")  # the first profile: the next one keeps its comment
    text = path.read_text()
    assert console_head in text and "profiles.gps" not in text
    assert text.startswith("# My bench devices -- edited by hand.\nschema_version = 1\n")
    for name in ("console", "new"):
        store.delete(name)
    text = path.read_text()
    assert tomllib.loads(text) == {"schema_version": 1}
    assert "# trailing comment at the end of the file" in text


def test_fully_inline_hand_written_profile_can_be_updated(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(
        'schema_version = 1\nprofiles.tiny = { selector = { vid = "0403" }, defaults = { baud_rate = 9600 } }  # tiny\n'
    )
    store = ProfileStore(path, clock=Clock())
    store.update("tiny", expected_revision=1, defaults={"parity": "odd"})
    store.touch_used("tiny")
    text = path.read_text()
    assert "# tiny" in text
    tiny = ProfileStore(path).get("tiny")
    assert tiny is not None and tiny.revision == 2 and tiny.use_count == 1
    assert tiny.defaults == {"baud_rate": 9600, "parity": "odd"} and tiny.history[0].defaults == {
        "baud_rate": 9600
    }


def test_a_byte_order_mark_is_accepted(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf# saved by an old editor\nschema_version = 1\n")
    store = ProfileStore(path)
    assert store.list() == []
    store.create("a", FTDI, {})
    assert path.read_bytes().startswith(b"# saved by an old editor\n")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
def test_a_symlinked_file_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "profiles.toml"
    real.parent.mkdir()
    real.write_text("schema_version = 1\n")
    link = tmp_path / "config" / "profiles.toml"
    link.parent.mkdir()
    link.symlink_to(real)
    ProfileStore(link).create("a", FTDI, {})
    assert link.is_symlink() and "[profiles.a.selector]" in real.read_text()
    assert temps(link.parent) == [] and temps(real.parent) == []


def test_a_canonical_file_is_rewritten_without_tomlkit(
    store: ProfileStore, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.create("a", FTDI, {"rx_parser": {"k": [1, {"x": "y"}]}})
    store.update("a", expected_revision=1, defaults={"baud_rate": 9600})
    store.touch_used("a")

    def no_tomlkit(text: str) -> Any:
        raise AssertionError("the fast path should not parse with tomlkit")

    monkeypatch.setattr(tomlkit, "parse", no_tomlkit)
    ProfileStore(path).update("a", expected_revision=2, defaults={"baud_rate": 4800})
    assert ProfileStore(path).get("a") is not None


# --- failures leave the file byte-identical -----------------------------------------------------------


@pytest.fixture
def seeded(store: ProfileStore, path: Path) -> Iterator[tuple[ProfileStore, bytes]]:
    store.create("dev", FTDI, {"baud_rate": 9600})
    yield store, path.read_bytes()


def test_exception_inside_the_apply_step_changes_nothing(
    seeded: tuple[ProfileStore, bytes], path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, before = seeded

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("apply failed")

    monkeypatch.setattr(store_module, "next_revision", boom)
    with pytest.raises(RuntimeError):
        store.update("dev", expected_revision=1, defaults={"baud_rate": 4800})
    assert path.read_bytes() == before and temps(path.parent) == []
    monkeypatch.undo()
    assert (
        store.update("dev", expected_revision=1, defaults={"baud_rate": 4800}).revision == 2
    )  # lock released


@pytest.mark.parametrize(("module", "victim"), [("os", "replace"), ("os", "fsync"), ("tempfile", "mkstemp")])
def test_io_failure_while_writing_changes_nothing(
    seeded: tuple[ProfileStore, bytes], path: Path, monkeypatch: pytest.MonkeyPatch, module: str, victim: str
) -> None:
    store, before = seeded

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr({"os": os, "tempfile": tempfile}[module], victim, fail)
    with pytest.raises(SerialMcpError) as exc:
        store.update("dev", expected_revision=1, defaults={"baud_rate": 4800})
    monkeypatch.undo()
    assert exc.value.code == "profile_store_io" and "No space left" in exc.value.message
    assert "\n" not in exc.value.message
    assert path.read_bytes() == before and temps(path.parent) == []
    got = store.get("dev")
    assert got is not None and got.revision == 1 and got.defaults == {"baud_rate": 9600}


def test_hand_edited_path_failure_changes_nothing(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    store = ProfileStore(path)
    before = path.read_bytes()

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("edit failed")

    monkeypatch.setattr(profile_toml, "sync", boom)
    with pytest.raises(RuntimeError):
        store.update("gps", expected_revision=1, defaults={"baud_rate": 4800})
    assert path.read_bytes() == before
    # An edit that does not read back as intended is caught before it reaches the disk.
    monkeypatch.setattr(profile_toml, "sync", lambda *args: None)
    with pytest.raises(SerialMcpError) as exc:
        store.update("gps", expected_revision=1, defaults={"baud_rate": 4800})
    assert exc.value.code == "profile_store_io" and "faithfully" in exc.value.message
    assert path.read_bytes() == before and temps(path.parent) == []


def test_lock_timeout_is_an_io_error_and_writes_nothing(
    seeded: tuple[ProfileStore, bytes], path: Path
) -> None:
    store, before = seeded
    quick = ProfileStore(path, lock_timeout=0.2)
    holder = filelock.FileLock(str(store.lock_path))
    with holder, pytest.raises(SerialMcpError) as exc:
        quick.update("dev", expected_revision=1, defaults={"baud_rate": 4800})
    assert exc.value.code == "profile_store_io" and "timed out" in exc.value.message
    assert path.read_bytes() == before
    assert quick.update("dev", expected_revision=1, defaults={"baud_rate": 4800}).revision == 2


def test_stale_temp_files_are_swept_under_the_lock(seeded: tuple[ProfileStore, bytes], path: Path) -> None:
    store, _ = seeded
    orphan = path.parent / f".{path.name}.dead1234.tmp"
    orphan.write_text("half a file")
    unrelated = path.parent / "notes.tmp"
    unrelated.write_text("mine")
    store.touch_used("dev")
    assert not orphan.exists() and unrelated.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_file_mode_is_preserved(seeded: tuple[ProfileStore, bytes], path: Path) -> None:
    store, _ = seeded
    path.chmod(0o640)
    store.touch_used("dev")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


# --- renderer property: what we write reads back identically -------------------------------------------

_scalars = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(st.characters(codec="utf-8"), max_size=12)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    parser=st.dictionaries(st.text(max_size=8), _values, max_size=4),
    product=st.text(st.characters(codec="utf-8"), min_size=1, max_size=20),
)
@pytest.mark.slow
def test_rendered_documents_read_back_identically(parser: dict[str, Any], product: str) -> None:
    if not product.strip():
        product = "p"
    data = {
        "schema_version": 1,
        "profiles": {
            "p": {
                "selector": {"product": product},
                "defaults": {"rx_parser": parser},
                "metadata": {
                    "revision": 2,
                    "updated": datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
                    "use_count": 0,
                    "generated": False,
                },
                "history": [
                    {"revision": 1, "selector": {"product": product}, "defaults": {"rx_parser": parser}}
                ],
            }
        },
    }
    text = profile_toml.render_body(data)
    assert same(tomllib.loads(text), data)
    assert same(tomlkit.parse(text).unwrap(), data)


def test_profile_is_a_frozen_value() -> None:
    p = Profile("x", dict(FTDI), {})
    with pytest.raises(AttributeError):
        p.name = "y"  # type: ignore[misc]


def test_the_store_holds_at_most_max_profiles(store: ProfileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MAX_PROFILES", 3)
    for i in range(3):
        store.save(f"p{i}", {"port_glob": f"/dev/ttyUSB{i}"}, {}, overwrite=False)
    with pytest.raises(SerialMcpError) as exc:
        store.save("p3", {"port_glob": "/dev/ttyUSB3"}, {}, overwrite=False)
    assert code_of(exc) == "resource_limit" and "delete some" in exc.value.message
    with pytest.raises(SerialMcpError) as exc:
        store.create("p3", {"port_glob": "/dev/ttyUSB3"}, {}, generated=True)
    assert code_of(exc) == "resource_limit"
    assert [p.name for p in store.list()] == ["p0", "p1", "p2"]  # nothing changed
    store.save(
        "p1", {"port_glob": "/dev/ttyUSB1"}, {"baud_rate": 9600}, overwrite=True
    )  # a replace needs no room
    store.delete("p0")
    store.save("p3", {"port_glob": "/dev/ttyUSB3"}, {}, overwrite=False)  # room again
