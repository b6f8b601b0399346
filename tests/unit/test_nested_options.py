"""Nested options are typed models declared once (issue 41.1): the options object refuses a bad one
as it is built, before any port is touched, with the option's own texts (the contract)."""

from __future__ import annotations

import typing
from typing import Annotated, Any

import pytest

from serial_mcp import api
from serial_mcp.core.unknown_keys import Keyed
from serial_mcp.engine.operations import OPERATIONS
from serial_mcp.engine.options import (
    CaptureBootOptions,
    OpenOptions,
    ReadOptions,
    TransactOptions,
    WriteOptions,
    build,
)
from serial_mcp.errors import InvalidArgument

CASES: list[tuple[type[Any], dict[str, Any], str]] = [
    (
        WriteOptions,
        {"pace": {"inter_byte_uss": 1}},
        "pace has an unknown key 'inter_byte_uss'. Did you mean 'inter_byte_us'?",
    ),
    (WriteOptions, {"pace": {"inter_line_ms": 60_001}}, "pace values must be whole numbers"),
    (WriteOptions, {"pace": {"inter_line_ms": True}}, "pace values must be whole numbers"),
    (
        OpenOptions,
        {"reconnect": {"max_atempts": 3}},
        "reconnect has an unknown key 'max_atempts'. Did you mean 'max_attempts'?",
    ),
    (OpenOptions, {"reconnect": {"max_attempts": -1}}, "reconnect values out of range"),
    (OpenOptions, {"reconnect": {"backoff": "fast"}}, "reconnect must be true, false, or an object"),
    (OpenOptions, {"reconnect": 3}, "reconnect must be true, false, or an object"),
    (
        OpenOptions,
        {"rs485": {"rts_for_tx": True}},
        "rs485 has an unknown key 'rts_for_tx'. Did you mean 'rts_level_for_tx'?",
    ),
    (OpenOptions, {"rs485": {"delay_before_tx": 2}}, "rs485 must be an object with any of"),
    (
        OpenOptions,
        {"respond": [{"on": "x", "sned": "y"}]},
        "respond has an unknown key 'sned'. Did you mean 'send'?",
    ),
    (OpenOptions, {"respond": ["terminal", "other"]}, "respond must be an object like"),
    (OpenOptions, {"respond": [{"on": "x", "send": "y"}] * 17}, "respond must be a list of at most 16 rules"),
    (
        ReadOptions,
        {"respond": {"on": "x", "send": "y", "times": 0}},
        "respond.times must be a whole number from 1 to 100.",
    ),
    (ReadOptions, {"respond": {"on": "x"}}, "respond must be an object like"),
    (TransactOptions, {"steps": []}, "steps must be a list of 1 to 32 steps"),
    (TransactOptions, {"steps": [{"sned": "x"}]}, "steps[0] has an unknown key 'sned'. Did you mean 'send'?"),
    (TransactOptions, {"steps": [{"send": "x"}, {"send": "y", "timeout_ms": "abc"}]}, "step 1: timeout_ms:"),
    (
        TransactOptions,
        {"steps": [{"send": "x", "respond": {"on": "a", "sendd": "b"}}]},
        "Did you mean 'send'?",
    ),
    (CaptureBootOptions, {"reset": "dtr"}, "reset must be null or an object like"),
    (CaptureBootOptions, {"reset": {"rts": "yes"}}, "reset must be null or an object like"),
    (CaptureBootOptions, {"reset": {"hold_ms": 10}}, "reset names no line"),
    (CaptureBootOptions, {"reset": {"rts": True, "hold_ms": 0}}, "reset.hold_ms must be a whole number"),
    (CaptureBootOptions, {"reset": {"dtrr": True}}, "reset has an unknown key 'dtrr'. Did you mean 'dtr'?"),
    (CaptureBootOptions, {"reset": {"kind": "1200"}}, "reset.kind is '1200'"),
    (
        CaptureBootOptions,
        {"reset": {"kind": "1200bps_touch", "dtr": False}},
        "takes no other key (it got dtr)",
    ),
    (CaptureBootOptions, {"reset": {"power": "on"}}, 'reset.power must be "cycle"'),
    (CaptureBootOptions, {"reset": {"digital_output": False}}, "reset.digital_output"),
    (CaptureBootOptions, {"reset": {"power": "cycle", "of_ms": 5}}, "Did you mean 'off_ms'?"),
]


@pytest.mark.parametrize(("model", "given", "text"), CASES)
def test_a_bad_nested_option_is_refused_as_the_options_are_built(
    model: type[Any], given: dict[str, Any], text: str
) -> None:
    args = ("dev",) if model is OpenOptions else ()
    with pytest.raises(InvalidArgument) as info:
        build(model, model.__name__, *args, **given)
    assert text in info.value.message


def test_good_nested_options_come_through_as_given() -> None:
    opts = build(
        OpenOptions,
        "open",
        "dev",
        pace={"inter_line_ms": 5},
        reconnect={"max_attempts": 3},
        rs485={"rts_level_for_tx": True},
        respond=[{"on": "login:", "send": "root\n"}, "terminal"],
    )
    assert opts.pace == {"inter_line_ms": 5} and opts.reconnect == {"max_attempts": 3}
    assert opts.respond == [{"on": "login:", "send": "root\n"}, "terminal"]
    steps = build(
        TransactOptions, "transact", steps=[{"send": "AT", "expect": "OK", "timeout_ms": 100}]
    ).steps
    assert steps == [{"send": "AT", "expect": "OK", "timeout_ms": 100}]


def _loose(hint: Any, seen: set[int]) -> list[str]:
    """Where ``hint`` (an option's type, its TypedDicts' fields and the object its tool publishes
    included) lets ``Any`` through: ``mypy`` would check no key or value there."""
    if hint is Any:
        return ["Any"]
    if id(hint) in seen:
        return []
    seen.add(id(hint))
    if typing.is_typeddict(hint):
        fields = typing.get_type_hints(hint, include_extras=True)
        return [f"{hint.__name__}.{k}: {w}" for k, v in fields.items() for w in _loose(v, seen)]
    found = [w for arg in typing.get_args(hint) for w in _loose(arg, seen)]
    if typing.get_origin(hint) is Annotated:
        found += [w for m in hint.__metadata__ if isinstance(m, Keyed) for w in _loose(m.wire, seen)]
    return found


def test_no_option_type_lets_any_through() -> None:
    """Issue 41.1: no option is ``dict[str, Any]`` (or ``Any``), so ``mypy`` rejects a misspelt key
    in every entry point; the Python API's own keywords are typed as strictly."""
    loose = {
        f"{op.name}.{name}": found
        for op in OPERATIONS
        for name, hint in typing.get_type_hints(op.options_type, include_extras=True).items()
        if (found := _loose(hint, set()))
    }
    for cls in (api.Engine, api.EngineConnection, api.SyncEngine, api.SyncConnection, api.EngineOptions):
        members = [cls] if typing.is_typeddict(cls) else [getattr(cls, n) for n in dir(cls) if n[0] != "_"]
        for member in (m for m in members if callable(m)):
            hints = typing.get_type_hints(member, include_extras=True)
            hints.pop("return", None), hints.pop("self", None)  # the instance, not a user's value
            loose.update({f"{cls.__name__}.{k}": f for k, v in hints.items() if (f := _loose(v, set()))})
    assert not loose, loose
