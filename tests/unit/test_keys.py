"""Named terminal keys: the bytes xterm sends, spellings, and errors that help."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from serial_mcp.core.keys import KEYS, encode_key, encode_keys, key_names
from serial_mcp.errors import InvalidArgument


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("ctrl-a", b"\x01"),
        ("ctrl-c", b"\x03"),
        ("ctrl-d", b"\x04"),
        ("ctrl-z", b"\x1a"),
        ("ctrl-@", b"\x00"),
        ("ctrl-[", b"\x1b"),
        ("ctrl-\\", b"\x1c"),
        ("ctrl-]", b"\x1d"),
        ("ctrl-^", b"\x1e"),
        ("ctrl-_", b"\x1f"),
        ("ctrl-?", b"\x7f"),
        ("enter", b"\r"),
        ("lf", b"\n"),
        ("crlf", b"\r\n"),
        ("tab", b"\t"),
        ("esc", b"\x1b"),
        ("space", b" "),
        ("backspace", b"\x7f"),
        ("bs", b"\x08"),
        ("delete", b"\x1b[3~"),
        ("insert", b"\x1b[2~"),
        ("up", b"\x1b[A"),
        ("down", b"\x1b[B"),
        ("right", b"\x1b[C"),
        ("left", b"\x1b[D"),
        ("home", b"\x1b[H"),
        ("end", b"\x1b[F"),
        ("page-up", b"\x1b[5~"),
        ("page-down", b"\x1b[6~"),
        ("f1", b"\x1bOP"),
        ("f4", b"\x1bOS"),
        ("f5", b"\x1b[15~"),
        ("f6", b"\x1b[17~"),
        ("f10", b"\x1b[21~"),
        ("f11", b"\x1b[23~"),
        ("f12", b"\x1b[24~"),
    ],
)
def test_key_bytes(key: str, expected: bytes) -> None:
    assert encode_key(key) == expected


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("CTRL-C", "ctrl-c"),
        ("Ctrl+C", "ctrl-c"),
        ("C-c", "ctrl-c"),
        ("^C", "ctrl-c"),
        ("^c", "ctrl-c"),
        ("control-x", "ctrl-x"),
        ("ctl-x", "ctrl-x"),
        ("ctrl_c", "ctrl-c"),
        ("ctrl c", "ctrl-c"),
        ("^[", "esc"),
        ("^@", "ctrl-@"),
        ("ctrl-space", "ctrl-@"),
        (" Enter ", "enter"),
        ("RETURN", "enter"),
        ("Escape", "esc"),
        ("Page Up", "page-up"),
        ("page_down", "page-down"),
        ("PgDn", "page-down"),
        ("del", "delete"),
        ("F12", "f12"),
        ("newline", "lf"),
    ],
)
def test_spellings(spelling: str, canonical: str) -> None:
    assert encode_key(spelling) == KEYS[canonical]


def test_sequence_in_order() -> None:
    assert encode_keys(["ctrl-c", "ctrl-c", "enter"]) == b"\x03\x03\r"
    assert encode_keys(["esc", ":", "w", "q", "enter"]) == b"\x1b:wq\r"  # one character is itself
    assert encode_keys(["down", "Y", "é"]) == b"\x1b[BY\xc3\xa9"
    assert encode_keys(["up", "enter"]) == b"\x1b[A\r"


def test_every_letter_ctrl() -> None:
    for i, letter in enumerate("abcdefghijklmnopqrstuvwxyz", start=1):
        assert encode_key(f"ctrl-{letter}") == bytes([i])
        assert encode_key(f"^{letter.upper()}") == bytes([i])


def test_names_are_canonical_and_unique_spellings() -> None:
    names = key_names()
    assert len(names) == len(set(names)) == len(KEYS)
    assert {"ctrl-c", "enter", "f1", "f12", "page-up", "space"} <= set(names)
    for name in names:
        assert encode_key(name) == KEYS[name]


def test_unknown_key_names_the_closest() -> None:
    with pytest.raises(InvalidArgument) as info:
        encode_keys(["ctrl-c", "entr"])
    assert info.value.code == "invalid_argument"
    assert "'entr'" in info.value.message and "did you mean enter" in info.value.message
    assert "ctrl-c" in info.value.message and "f1" in info.value.message  # a few valid keys
    assert info.value.details["suggestions"][0] == "enter"


def test_unknown_alias_suggests_the_canonical_name() -> None:
    with pytest.raises(InvalidArgument) as info:
        encode_key("pgupp")
    assert "page-up" in info.value.details["suggestions"]


def test_unknown_without_close_match() -> None:
    with pytest.raises(InvalidArgument) as info:
        encode_key("xyzzy-plugh")
    assert "did you mean" not in info.value.message
    assert "valid keys include" in info.value.message


def test_break_is_not_a_key() -> None:
    with pytest.raises(InvalidArgument, match="send_break"):
        encode_keys(["BREAK"])


def test_empty_and_wrong_types() -> None:
    with pytest.raises(InvalidArgument, match="keys is empty"):
        encode_keys([])
    with pytest.raises(InvalidArgument, match="must be a string"):
        encode_keys([3])  # type: ignore[list-item]
    assert encode_keys("ctrl-c") == b"\x03"  # a lone name is one key, not five characters


def test_nothing_is_encoded_when_one_name_is_wrong() -> None:
    with pytest.raises(InvalidArgument):
        encode_keys(["enter", "nope"])


@given(st.lists(st.sampled_from(sorted(KEYS)), min_size=1, max_size=20))
@pytest.mark.slow
def test_concatenation(keys: list[str]) -> None:
    assert encode_keys(keys) == b"".join(KEYS[k] for k in keys)
    assert encode_keys([k.upper() for k in keys]) == encode_keys(keys)
