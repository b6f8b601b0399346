"""Errors as plain classes (issue 41.4): each code raised as exactly one family, catchable by it,
with its context; the merged codes (``busy`` → ``port_busy``, ``unsupported`` → ``not_supported``)
still read for a release."""

from __future__ import annotations

import pickle

import pytest

from serial_mcp.errors import (
    DEPRECATED_CODES,
    FAMILIES,
    FAMILY,
    DeviceError,
    ErrorCode,
    InvalidArgument,
    PortError,
    SerialMcpError,
)


@pytest.mark.parametrize("code", list(ErrorCode))
def test_every_code_is_raised_as_exactly_one_family_and_caught_by_it(code: ErrorCode) -> None:
    owners = [fam for fam in FAMILIES if code in fam.codes]
    assert owners == [FAMILY[code]], (code, owners)
    family = FAMILY[code]
    with pytest.raises(family) as caught:
        raise family(code, "it failed", port="/dev/ttyUSB0", connection_id="c1")
    exc = caught.value
    assert isinstance(exc, SerialMcpError) and exc.code is code and str(exc) == "it failed"
    assert (exc.port, exc.connection_id, exc.operation) == ("/dev/ttyUSB0", "c1", None)
    others = [fam for fam in FAMILIES[1:] if fam is not family and isinstance(exc, fam)]
    assert not others, others  # families are disjoint: catching one never catches another's code


def test_the_families_are_the_public_ones_and_only_internal_error_is_the_base() -> None:
    import serial_mcp

    assert SerialMcpError.codes == (ErrorCode.INTERNAL_ERROR,)
    assert all(getattr(serial_mcp, fam.__name__) is fam for fam in FAMILIES)


@pytest.mark.parametrize(("old", "new", "family"), [("busy", "port_busy", PortError), ("unsupported", "not_supported", DeviceError)])  # fmt: skip
def test_a_merged_code_is_still_accepted_as_the_one_that_survives(old: str, new: str, family: type) -> None:
    assert DEPRECATED_CODES[old] == new
    # the old value and the old name (ErrorCode.BUSY) both read as the code that survives
    assert ErrorCode(old) is ErrorCode(new) is getattr(ErrorCode, old.upper())
    assert old not in {c.value for c in ErrorCode}  # never sent: one code per meaning
    assert FAMILY[ErrorCode(old)] is family
    with pytest.raises(family) as caught:
        raise family(old, "held by someone else")
    assert caught.value.code == new and caught.value.code == getattr(ErrorCode, old.upper())
    with pytest.raises(ValueError):
        ErrorCode("bussy")


def test_invalid_argument_defaults_its_code_and_keeps_details() -> None:
    plain = InvalidArgument("baud_rate must be positive", field="baud_rate")
    assert plain.code == ErrorCode.INVALID_ARGUMENT and plain.details == {"field": "baud_rate"}
    named = InvalidArgument(ErrorCode.CAPTURE_INVALID, "line 3: not JSON", line=3)
    assert named.code == ErrorCode.CAPTURE_INVALID and named.details == {"line": 3}


def test_an_error_pickles_as_its_family_with_its_context() -> None:
    exc = PortError(ErrorCode.PORT_BUSY, "port /dev/x is open", port="/dev/x", holder="pid 7")
    exc.attach("open", "c9")
    exc.attach("close", "c10")  # the innermost operation wins
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is PortError and str(back) == "port /dev/x is open"
    assert (back.code, back.port, back.connection_id, back.operation) == ("port_busy", "/dev/x", "c9", "open")
    assert back.details == {"holder": "pid 7"}


def test_a_message_is_capped() -> None:
    exc = InvalidArgument("value " + "x" * 5000)
    assert len(exc.message) < 300 and "5000 characters" in exc.message


def test_the_port_in_an_errors_context_carries_no_secret() -> None:
    url = "rfc2217://admin:hunter22@lab-host:2217"
    exc = PortError(ErrorCode.PORT_OPEN_FAILED, "cannot open", port=url)
    assert exc.port is not None and "hunter22" not in exc.port and "lab-host" in exc.port
    assert PortError(ErrorCode.PORT_BUSY, "busy", port="/dev/ttyUSB0").port == "/dev/ttyUSB0"
