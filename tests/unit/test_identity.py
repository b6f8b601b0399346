"""Port identity, selector matching and what a bare open(port) does with profiles."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from serial_mcp.core.identity import (
    NAME_RE,
    auto_profile_name,
    fingerprint,
    generated_selector,
    identity_of,
    is_virtual_port,
    plan_bare_open,
    selector_matches,
    validate_selector,
)
from serial_mcp.errors import SerialMcpError
from serial_mcp.serial.ports import PortInfo
from serial_mcp.store.profiles import ProfileStore


def usb(
    name: str = "/dev/ttyUSB0",
    serial: str | None = "A10K3Z",
    *,
    vid: str | None = "0403",
    pid: str | None = "6001",
    product: str | None = "FT232R USB UART",
    interface: str | None = None,
    location: str | None = "1-1.2",
    description: str | None = "FT232R USB UART",
) -> PortInfo:
    return PortInfo(
        name, description, "USB VID:PID", vid, pid, serial, "FTDI", product, interface, location, "usb"
    )


def native(name: str = "/dev/ttyS0", description: str | None = "ttyS0") -> PortInfo:
    return PortInfo(name, description, None, None, None, None, None, None, None, None, "native")


@dataclass(frozen=True)
class FakeProfile:
    name: str
    selector: dict[str, str]
    revision: int = 1
    last_used: datetime | None = None
    updated: datetime | None = None


def at(hour: int) -> datetime:
    return datetime(2025, 1, 1, hour, tzinfo=UTC)


# --- confidence and fingerprints -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("port", "confidence", "fp"),
    [
        (usb(), "high", "usb:0403:6001:A10K3Z"),
        (
            usb(vid="0403", pid="6001", serial="A1", interface="Enhanced Com Port"),
            "high",
            "usb:0403:6001:A1/Enhanced Com Port",
        ),
        (usb(vid="1A86", pid="7523", serial=None, product="USB Serial"), "medium", "usb:1a86:7523"),
        (usb(serial="  "), "medium", "usb:0403:6001"),
        (usb(serial="n/a"), "medium", "usb:0403:6001"),
        (usb(vid=None, pid=None, serial=None), "medium", "usb:?"),  # USB with a location only
        (native(), "low", "desc:ttyS0"),
        (native("COM1", "Communications Port (COM1)"), "low", "desc:Communications Port (COM1)"),
        (native("/dev/ttyAMA0", None), "none", None),
        (native("/dev/pts/3", "pty"), "none", None),
        (native("/dev/ttys004", "pty"), "none", None),
        (native("socket://localhost:7000", "tcp"), "none", None),
        (native("sim://modem", "simulated modem"), "none", None),
        (native("loop://", None), "none", None),
        # A USB identity wins over the path: fake providers map real devices onto PTYs.
        (usb("/dev/pts/7"), "high", "usb:0403:6001:A10K3Z"),
    ],
)
def test_confidence_and_fingerprint(port: PortInfo, confidence: str, fp: str | None) -> None:
    ident = identity_of(port)
    assert ident.confidence == confidence
    assert fingerprint(ident) == fp
    json.dumps(ident.as_dict())


def test_identity_normalizes_ids_and_blanks() -> None:
    ident = identity_of(usb(vid="0403", pid="60A1", serial=" A1 ", description="n/a", location=""))
    assert (ident.vid, ident.pid, ident.serial_number, ident.description, ident.location) == (
        "0403",
        "60a1",
        "A1",
        None,
        None,
    )


def test_virtual_ports() -> None:
    assert is_virtual_port("/dev/pts/0") and is_virtual_port("rfc2217://h:1") and is_virtual_port("/dev/ptmx")
    assert (
        not is_virtual_port("/dev/ttyUSB0")
        and not is_virtual_port("COM3")
        and not is_virtual_port("/dev/ttyS0")
    )


# --- selectors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "port", "expected"),
    [
        ({"vid": "0403", "pid": "6001", "serial_number": "A10K3Z"}, usb(), True),
        ({"vid": "0403", "pid": "6001", "serial_number": "OTHER"}, usb(), False),
        ({"vid": "0403", "pid": "6001"}, usb(vid="0403", pid="6001"), True),
        ({"vid": "0403", "pid": "6001"}, usb(vid="0403", pid="6015"), False),
        ({"vid": "0403"}, native(), False),  # a field the port lacks never matches
        ({"product": "FT232R USB UART"}, usb(), True),
        ({"product": "ft232r usb uart"}, usb(), False),  # text fields are exact
        ({"manufacturer": "FTDI", "serial_number": "A10K3Z"}, usb(), True),
        ({"interface": "Standard Com Port"}, usb(interface="Enhanced Com Port"), False),
        ({"port_glob": "/dev/ttyUSB*"}, usb(), True),
        ({"port_glob": "/dev/ttyACM*"}, usb(), False),
        ({"port_glob": "/dev/ttyUSB?", "serial_number": "A10K3Z"}, usb("/dev/ttyUSB12"), False),
        ({"description_glob": "*ft232r*"}, usb(), True),  # descriptions ignore case
        ({"description_glob": "*cp210*"}, usb(), False),
        ({"description_glob": "*"}, native("/dev/ttyS1", None), False),
        ({}, usb(), False),  # an empty selector matches nothing
        ({"colour": "blue"}, usb(), False),  # an unknown field can never be confirmed
    ],
)
def test_selector_matches(selector: dict[str, str], port: PortInfo, expected: bool) -> None:
    assert selector_matches(selector, port) is expected


def test_validate_selector_normalizes_and_orders() -> None:
    assert validate_selector({"serial_number": "A1", "pid": "0X6001", "vid": 1027, "product": None}) == {
        "vid": "0403",
        "pid": "6001",
        "serial_number": "A1",
    }
    with pytest.raises(SerialMcpError) as exc:
        validate_selector({"pid_": "6001"})
    assert exc.value.code == "invalid_argument" and "Did you mean 'pid'" in exc.value.message


# --- automatic names -------------------------------------------------------------------------------


def test_auto_profile_names() -> None:
    assert auto_profile_name(usb()) == "auto-ft232r-usb-uart-a10k3z"
    assert auto_profile_name(usb(), {"auto-ft232r-usb-uart-a10k3z"}) == "auto-ft232r-usb-uart-a10k3z-2"
    taken = {"auto-ft232r-usb-uart-a10k3z", "auto-ft232r-usb-uart-a10k3z-2"}
    assert auto_profile_name(usb(), taken) == "auto-ft232r-usb-uart-a10k3z-3"
    assert auto_profile_name(usb(product=None)) == "auto-ftdi-a10k3z"  # falls back to the manufacturer
    odd = usb(product="  Ünïcode / Gadget:#1  ", serial="S/N 42")
    assert auto_profile_name(odd) == "auto-unicode-gadget-1-s-n-42"
    long = usb(product="X" * 100, serial="SERIAL")
    name = auto_profile_name(long, {auto_profile_name(long)})
    assert len(name) == 64 and name.endswith("-2") and NAME_RE.fullmatch(name)
    assert NAME_RE.fullmatch(auto_profile_name(usb(product="---", serial="...")))


# --- what a bare open does --------------------------------------------------------------------------


def test_unique_high_confidence_device_without_profile_generates_one() -> None:
    port = usb()
    plan = plan_bare_open(
        port,
        [port, usb("/dev/ttyUSB1", "OTHER")],
        [FakeProfile("auto-ft232r-usb-uart-a10k3z", {"serial_number": "nope"})],
    )
    assert plan.action == "generate"
    assert plan.profile == "auto-ft232r-usb-uart-a10k3z-2"  # the plain name is taken by another device
    assert plan.selector == {"vid": "0403", "pid": "6001", "serial_number": "A10K3Z"}
    assert plan.selector is not None and selector_matches(plan.selector, port)
    assert "will be created" in plan.reason and plan.candidates == ()
    json.dumps(plan.as_dict())


def test_generated_selector_includes_a_distinguishing_interface() -> None:
    a = usb("/dev/ttyUSB0", "CP1", interface="Enhanced Com Port")
    b = usb("/dev/ttyUSB1", "CP1", interface="Standard Com Port")
    plan = plan_bare_open(a, [a, b], [])
    assert plan.action == "generate" and plan.selector is not None
    assert plan.selector["interface"] == "Enhanced Com Port"
    assert selector_matches(plan.selector, a) and not selector_matches(plan.selector, b)
    assert generated_selector(identity_of(a)) == plan.selector


def test_matching_profiles_reuse_the_most_recently_used() -> None:
    port = usb()
    profiles = [
        FakeProfile("old", {"serial_number": "A10K3Z"}, last_used=at(1), updated=at(5)),
        FakeProfile(
            "recent", {"vid": "0403", "pid": "6001", "serial_number": "A10K3Z"}, revision=4, last_used=at(3)
        ),
        FakeProfile("never-used", {"port_glob": "/dev/ttyUSB*"}, updated=at(9)),
        FakeProfile("elsewhere", {"serial_number": "OTHER"}, last_used=at(8)),
    ]
    plan = plan_bare_open(port, [port], profiles)
    assert plan.action == "reuse" and plan.profile == "recent"
    assert plan.candidates == ("recent", "old", "never-used")
    assert "revision 4" in plan.reason and "other matches: old, never-used" in plan.reason


def test_duplicate_fingerprints_give_a_transient_session() -> None:
    a, b = usb("/dev/ttyUSB0"), usb("/dev/ttyUSB1")  # two adapters with the same (cloned) serial
    plan = plan_bare_open(a, [a, b], [FakeProfile("p", {"serial_number": "A10K3Z"})])
    assert plan.action == "transient" and plan.profile is None and plan.selector is None
    assert "/dev/ttyUSB0, /dev/ttyUSB1" in plan.reason and "usb:0403:6001:A10K3Z" in plan.reason
    assert plan.candidates == ("p",)


@pytest.mark.parametrize(
    ("port", "why"),
    [
        (usb(serial=None, vid="1a86", pid="7523"), "USB 1a86:7523 without a serial number"),
        (native(), "only a description"),
        (native("/dev/pts/4", None), "only a path"),
        (native("socket://h:1", None), "only a path"),
    ],
)
def test_weak_identity_gives_a_transient_session(port: PortInfo, why: str) -> None:
    plan = plan_bare_open(port, [port], [FakeProfile("glob", {"port_glob": port.name})])
    assert plan.action == "transient" and why in plan.reason
    assert plan.candidates == ("glob",) and "open_profile" in plan.reason


def test_profile_mode_none_disables_profiles() -> None:
    port = usb()
    plan = plan_bare_open(port, [port], [FakeProfile("p", {"serial_number": "A10K3Z"})], profile_mode="none")
    assert plan.action == "transient" and "profile_mode is 'none'" in plan.reason
    with pytest.raises(SerialMcpError) as exc:
        plan_bare_open(port, [port], [], profile_mode="off")
    assert exc.value.code == "invalid_argument" and "auto, none" in exc.value.message


def test_plan_with_a_real_store_generates_then_reuses(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "profiles.toml")
    port = usb("/dev/pts/9")  # a fake USB identity on a real PTY path
    first = plan_bare_open(port, [port], store.list())
    assert first.action == "generate" and first.profile is not None and first.selector is not None
    store.create(first.profile, first.selector, {"baud_rate": 9600}, generated=True)
    second = plan_bare_open(port, [port], store.list())
    assert second.action == "reuse" and second.profile == first.profile
    assert [p.name for p in store.find_matches(port)] == [first.profile]
