"""serial_mcp.core.checksums against published vectors and an independent bitwise reference.

The CRC catalogue file (crcany's allcrcs.txt) is parsed here on its own, so a mistake in
the generated catalogue module cannot hide a mistake in the engine. Data and licences:
tests/data/crc/SOURCES.md.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serial_mcp.core import checksums
from serial_mcp.core.checksums import algorithms, canonical_name, compute, width_bytes
from serial_mcp.core.crc_catalogue import MODELS, OLD_NAMES
from serial_mcp.errors import InvalidArgument

DATA = Path(__file__).resolve().parent.parent / "data" / "crc"
CHECK_INPUT = b"123456789"


# --- independent references ----------------------------------------------------------------------


class Model(NamedTuple):
    name: str
    width: int
    poly: int
    init: int
    refin: bool
    refout: bool
    xorout: int
    check: int
    residue: int


def parse_allcrcs(text: str) -> list[Model]:
    """Parse allcrcs.txt lines (``width=16 poly=0x8005 ... name="CRC-16/ARC"``)."""
    models = []
    for line in text.splitlines():
        if not line.strip():
            continue
        f = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
        assert set(f) == {"width", "poly", "init", "refin", "refout", "xorout", "check", "residue", "name"}
        models.append(
            Model(
                name=f["name"].strip('"'),
                width=int(f["width"]),
                poly=int(f["poly"], 16),
                init=int(f["init"], 16),
                refin=f["refin"] == "true",
                refout=f["refout"] == "true",
                xorout=int(f["xorout"], 16),
                check=int(f["check"], 16),
                residue=int(f["residue"], 16),
            )
        )
    return models


FILE_MODELS = parse_allcrcs((DATA / "allcrcs.txt").read_text(encoding="ascii"))
RENAMES: list[tuple[str, str]] = [
    (old.strip(), new.strip())
    for old, _, new in (
        line.partition("->")
        for line in (DATA / "allcrcs-name-changes.txt").read_text(encoding="ascii").splitlines()
    )
    if new
]
VECTORS: dict[str, Any] = json.loads((DATA / "checksum_vectors.json").read_text(encoding="utf-8"))
BY_NAME = {m.name: m for m in FILE_MODELS}


def reflect(value: int, width: int) -> int:
    out = 0
    for _ in range(width):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


def crc_bitwise(m: Model, data: bytes) -> int:
    """Textbook Rocksoft CRC: one message bit at a time, MSB-first register."""
    mask = (1 << m.width) - 1
    crc = m.init
    for byte in data:
        if m.refin:
            byte = reflect(byte, 8)
        for i in range(7, -1, -1):
            feedback = ((crc >> (m.width - 1)) ^ (byte >> i)) & 1
            crc = (crc << 1) & mask
            if feedback:
                crc ^= m.poly
    if m.refout:
        crc = reflect(crc, m.width)
    return crc ^ m.xorout


def words(data: bytes, size: int, order: str) -> list[int]:
    data = data + bytes(-len(data) % size)
    return [int.from_bytes(data[i : i + size], order) for i in range(0, len(data), size)]  # type: ignore[arg-type]


def fletcher_naive(values: list[int], modulus: int, bits: int) -> int:
    s1 = s2 = 0
    for v in values:
        s1 = (s1 + v) % modulus
        s2 = (s2 + s1) % modulus
    return (s2 << bits) | s1


def snake(name: str) -> str:
    return re.sub(r"[-/ ]+", "_", re.sub(r"^crc-(?=\d)", "crc", name.lower()))


# --- the catalogue -------------------------------------------------------------------------------


def test_file_has_113_models() -> None:
    assert len(FILE_MODELS) == 113
    assert len(BY_NAME) == 113


@pytest.mark.parametrize("model", FILE_MODELS, ids=lambda m: m.name)
def test_catalogue_check_value(model: Model) -> None:
    assert compute(model.name, CHECK_INPUT) == model.check
    assert compute(snake(model.name), CHECK_INPUT) == model.check


def test_catalogue_module_matches_file() -> None:
    assert [tuple(m) for m in MODELS] == [tuple(m) for m in FILE_MODELS]
    assert dict(RENAMES) == OLD_NAMES


RESIDUE_MODELS = [m for m in FILE_MODELS if m.width % 8 == 0 and m.refin == m.refout]


@pytest.mark.parametrize("model", RESIDUE_MODELS, ids=lambda m: m.name)
def test_codeword_leaves_catalogue_residue(model: Model) -> None:
    """A message followed by its own CRC leaves the catalogue ``residue`` (before xorout)."""
    crc = compute(model.name, CHECK_INPUT)
    codeword = CHECK_INPUT + crc.to_bytes(model.width // 8, "little" if model.refout else "big")
    assert compute(model.name, codeword) ^ model.xorout == model.residue


def test_empty_input_all_models() -> None:
    for m in FILE_MODELS:
        assert compute(m.name, b"") == crc_bitwise(m, b""), m.name


@pytest.mark.parametrize(("old", "new"), RENAMES, ids=[old for old, _ in RENAMES])
def test_former_names_resolve(old: str, new: str) -> None:
    assert canonical_name(old) == canonical_name(new) == snake(new)
    assert canonical_name(snake(old)) == snake(new)
    assert compute(old, CHECK_INPUT) == BY_NAME[new].check


# --- engine properties ---------------------------------------------------------------------------

FAST_PATH_MODELS = [m for m in FILE_MODELS if (m.width, m.poly) in {(32, 0x04C11DB7), (16, 0x1021)}]


@settings(max_examples=400, deadline=None)
@given(model=st.sampled_from(FILE_MODELS), data=st.binary(max_size=80))
@pytest.mark.slow
def test_table_driven_equals_bitwise(model: Model, data: bytes) -> None:
    assert compute(model.name, data) == crc_bitwise(model, data)


@pytest.mark.parametrize("model", FAST_PATH_MODELS, ids=lambda m: m.name)
@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=300))
@pytest.mark.slow
def test_c_fast_paths_equal_table_and_bitwise(model: Model, data: bytes) -> None:
    internal = checksums.crc_model(model.name)
    assert internal is not None
    expected = crc_bitwise(model, data)
    assert compute(model.name, data) == expected
    assert checksums._crc_table(internal, data) == expected


def test_fast_paths_cover_common_models() -> None:
    names = {m.name for m in FAST_PATH_MODELS}
    assert {"CRC-32/ISO-HDLC", "CRC-32/MPEG-2", "CRC-16/XMODEM", "CRC-16/KERMIT", "CRC-16/IBM-3740"} <= names


def test_large_input_table_equals_fast_path() -> None:
    data = bytes(range(256)) * 257
    for name in ("CRC-32/ISO-HDLC", "CRC-32/BZIP2", "CRC-16/KERMIT", "CRC-16/IBM-3740"):
        model = checksums.crc_model(name)
        assert model is not None
        assert compute(name, data) == checksums._crc_table(model, data)


@given(data=st.binary(max_size=200))
def test_bytes_like_inputs_agree(data: bytes) -> None:
    for name in ("crc16_modbus", "crc32", "crc16_kermit", "xor16", "fletcher32", "crc5_usb"):
        expected = compute(name, data)
        assert compute(name, bytearray(data)) == expected
        assert compute(name, memoryview(data)) == expected


# --- simple checksums ----------------------------------------------------------------------------

XOR_SUM_NAMES = {
    "Checksum8 (sum of bytes mod 2^8)": "sum8",
    "Checksum16 (sum of 16-bit words)": "sum16",
    "Checksum32 (sum of 32-bit words)": "sum32",
    "ChecksumXor8 (XOR of bytes)": "xor",
    "ChecksumXor16": "xor16",
    "ChecksumXor32": "xor32",
}


def simple_vectors() -> list[tuple[str, bytes, int]]:
    """Every record of checksum_vectors.json as (algorithm, data, expected)."""
    out: list[tuple[str, bytes, int]] = []
    for rec in VECTORS["additive_and_xor"]:  # our word sums are big-endian
        out.append(
            (
                XOR_SUM_NAMES[rec["algorithm"]],
                bytes.fromhex(rec["data_hex"]),
                int(rec["result_big_endian_words"], 16),
            )
        )
    for rec in VECTORS["fletcher"]:
        for name in ("fletcher16", "fletcher32", "fletcher64"):
            out.append((name, rec["input_ascii"].encode(), int(rec[name], 16)))
    for rec in VECTORS["adler32"]:
        out.append(("adler32", rec["input_ascii"].encode(), int(rec["adler32"], 16)))
    for rec in VECTORS["lrc"]:
        out.append(("lrc", bytes.fromhex(rec["data_hex"]), int(rec["lrc_modbus"], 16)))
    return out


def test_vector_file_sections_are_all_used() -> None:
    assert set(VECTORS) == {"_about", "additive_and_xor", "fletcher", "adler32", "lrc", "nmea_xor"}
    assert len(simple_vectors()) == 6 + 3 * 3 + 1 + 3


@pytest.mark.parametrize(("name", "data", "expected"), simple_vectors(), ids=lambda v: str(v)[:24])
def test_published_simple_vectors(name: str, data: bytes, expected: int) -> None:
    assert compute(name, data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (bytes.fromhex("1103006B0003"), 0x7E),  # Modbus over serial line guide, read holding registers
        (bytes.fromhex("010300000001"), 0xFB),
        (b"", 0x00),
        (bytes.fromhex("FF"), 0x01),
    ],
)
def test_modbus_lrc(data: bytes, expected: int) -> None:
    assert compute("lrc", data) == expected


@given(data=st.binary(max_size=300))
def test_lrc_makes_byte_sum_zero(data: bytes) -> None:
    assert (sum(data) + compute("lrc", data)) & 0xFF == 0


@pytest.mark.parametrize(
    "sentence",
    [  # real receiver output, ntpsec/gpsd test/daemon (GPSmap-76S.log, ais-nmea.log, st-teseo-liv4f.log)
        "$GPRMC,125106,V,3854.5087,N,07726.4523,W,0.0,0.0,241011,10.5,W,S*28",
        "$GPGGA,125106,3854.5087,N,07726.4523,W,8,10,2.0,268.8,M,-33.9,M,,*7F",
        "!AIVDM,2,1,9,B,55R3Vn82=ILTQ3KKS>1<D60Dq@E918U<F222221J1`?164vc03S1CCAD,0*2A",
        "$$GNGSA,A,3,44,34,25,11,19,23,38,,,,,,2.5,1.7,1.8,4*3E",
    ],
)
def test_nmea_xor(sentence: str) -> None:
    body, star, checksum = sentence.lstrip("$!").rpartition("*")
    assert star
    assert compute("xor", body.encode("ascii")) == int(checksum, 16)


@settings(max_examples=200)
@given(data=st.binary(max_size=301))
def test_simple_checksums_match_naive_definitions(data: bytes) -> None:
    xor8 = 0
    for b in data:
        xor8 ^= b
    assert compute("xor", data) == xor8
    assert compute("sum8", data) == sum(data) % 256
    for size, bits in ((2, 16), (4, 32)):
        be = words(data, size, "big")
        acc = 0
        for w in be:
            acc ^= w
        assert compute(f"xor{bits}", data) == acc
        assert compute(f"sum{bits}", data) == sum(be) % (1 << bits)
    assert compute("fletcher16", data) == fletcher_naive(list(data), 255, 8)
    assert compute("fletcher32", data) == fletcher_naive(words(data, 2, "little"), 0xFFFF, 16)
    assert compute("fletcher64", data) == fletcher_naive(words(data, 4, "little"), 0xFFFFFFFF, 32)


# --- names, widths, errors -----------------------------------------------------------------------

TOOLS_MD = {  # the names TOOLS.md promises for compute_checksum, with their value for "123456789"
    "xor": 0x31,
    "lrc": 0x23,
    "sum8": 0xDD,
    "crc8": 0xF4,
    "crc16_modbus": 0x4B37,
    "crc16_ccitt_false": 0x29B1,
    "crc16_xmodem": 0x31C3,
    "crc16_kermit": 0x2189,
    "crc32": 0xCBF43926,
    "fletcher16": 0x1EDE,
}


@pytest.mark.parametrize(("name", "expected"), TOOLS_MD.items())
def test_tools_md_algorithms(name: str, expected: int) -> None:
    assert compute(name, CHECK_INPUT) == expected


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("CRC-16/MODBUS", "crc16_modbus"),
        ("crc-16/modbus", "crc16_modbus"),
        ("crc16_modbus", "crc16_modbus"),
        ("CRC16 MODBUS", "crc16_modbus"),
        ("crc_16_modbus", "crc16_modbus"),
        ("Crc16-Modbus", "crc16_modbus"),
        ("  crc16modbus ", "crc16_modbus"),
        ("MODBUS", "crc16_modbus"),
        ("crc16_ccitt_false", "crc16_ibm_3740"),
        ("CRC-16/CCITT-FALSE", "crc16_ibm_3740"),
        ("crc16_xmodem", "crc16_xmodem"),
        ("XMODEM", "crc16_xmodem"),
        ("crc16_kermit", "crc16_kermit"),
        ("crc16_x25", "crc16_ibm_sdlc"),
        ("X-25", "crc16_ibm_sdlc"),
        ("crc8", "crc8_smbus"),
        ("CRC-8", "crc8_smbus"),
        ("crc8_smbus", "crc8_smbus"),
        ("crc8_maxim", "crc8_maxim_dow"),
        ("crc32", "crc32_iso_hdlc"),
        ("CRC-32/ISO-HDLC", "crc32_iso_hdlc"),
        ("crc32c", "crc32_iscsi"),
        ("CRC-32C", "crc32_iscsi"),
        ("crc32_mpeg2", "crc32_mpeg_2"),
        ("crc32_mpeg_2", "crc32_mpeg_2"),
        ("crc8_dvbs2", "crc8_dvb_s2"),
        ("CRC-16/ISO-IEC-14443-3-A", "crc16_iso_iec_14443_3_a"),
        ("CRC-A", "crc16_iso_iec_14443_3_a"),
        ("CRC-82/DARC", "crc82_darc"),
        ("XOR", "xor"),
        ("xor8", "xor"),
        ("LRC", "lrc"),
        ("Fletcher-16", "fletcher16"),
        ("ADLER32", "adler32"),
        ("adler_32", "adler32"),
    ],
)
def test_canonical_name(spelling: str, canonical: str) -> None:
    assert canonical_name(spelling) == canonical


def test_algorithms_list() -> None:
    names = algorithms()
    assert names == sorted(names)
    assert len(names) == len(set(names))
    assert {snake(m.name) for m in FILE_MODELS} <= set(names)
    simple = {
        "xor",
        "xor16",
        "xor32",
        "lrc",
        "sum8",
        "sum16",
        "sum32",
        "fletcher16",
        "fletcher32",
        "fletcher64",
        "adler32",
        "ubx",
    }
    assert set(names) == simple | {snake(m.name) for m in FILE_MODELS}
    assert names is not algorithms()  # a fresh list: callers may mutate it
    for name in names:
        assert canonical_name(name) == name
        assert canonical_name(name.upper()) == name


def test_all_spellings_are_distinct() -> None:
    """No two algorithms collapse to the same separator-free key."""
    keys = [re.sub(r"[-/_ ]", "", n) for n in algorithms()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("name", algorithms())
def test_width_bytes_bounds_every_result(name: str) -> None:
    assert 0 <= compute(name, CHECK_INPUT) < 256 ** width_bytes(name)
    assert 0 <= compute(name, b"\xff" * 37) < 256 ** width_bytes(name)


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("xor", 1), ("lrc", 1), ("sum8", 1), ("sum16", 2), ("sum32", 4), ("xor16", 2), ("xor32", 4),
        ("fletcher16", 2), ("fletcher32", 4), ("fletcher64", 8), ("adler32", 4), ("crc8", 1),
        ("crc16_modbus", 2), ("crc32", 4), ("CRC-3/GSM", 1), ("CRC-12/UMTS", 2), ("CRC-24/OPENPGP", 3),
        ("CRC-40/GSM", 5), ("CRC-64/XZ", 8), ("CRC-82/DARC", 11),
    ],
)  # fmt: skip
def test_width_bytes(name: str, size: int) -> None:
    assert width_bytes(name) == size


def test_crc_model_exposes_parameters() -> None:
    model = checksums.crc_model("crc16_modbus")
    assert model is not None
    assert (model.name, model.width, model.poly, model.init, model.refin) == (
        "CRC-16/MODBUS",
        16,
        0x8005,
        0xFFFF,
        True,
    )
    assert checksums.crc_model("xor") is None


@pytest.mark.parametrize(
    ("typo", "suggested"),
    [
        ("crc16_modbsu", "crc16_modbus"),
        ("crc-16/modbas", "crc16_modbus"),
        ("crc16_ccit_false", "crc16_ccitt_false"),
        ("fletcher61", "fletcher16"),
        ("adler23", "adler32"),
        ("crc32_iscs", "crc32_iscsi"),
        ("crc13", "crc13_bbc"),
    ],
)
def test_unknown_name_suggests_closest(typo: str, suggested: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        compute(typo, b"x")
    err = info.value
    assert err.code == "invalid_argument"
    assert repr(typo) in err.message
    assert suggested in err.message
    assert suggested in err.details["suggestions"]
    assert len(err.details["suggestions"]) <= 4


def test_clear_typo_is_the_first_suggestion() -> None:
    with pytest.raises(InvalidArgument) as info:
        canonical_name("crc16_modbsu")
    assert info.value.details["suggestions"][0] == "crc16_modbus"


def test_bare_width_is_ambiguous() -> None:
    with pytest.raises(InvalidArgument) as info:
        canonical_name("CRC-16")
    message = info.value.message
    assert "ambiguous" in message
    assert "31" in message  # CRC-16 models in the catalogue
    assert "crc16_modbus" in message
    assert info.value.details["suggestions"][:2] == ["crc16_modbus", "crc16_ccitt_false"]


def test_unknown_name_without_close_match_lists_examples() -> None:
    with pytest.raises(InvalidArgument) as info:
        width_bytes("zzzzzzzz")
    message = info.value.message
    assert "crc16_modbus" in message
    assert str(len(algorithms())) in message
    assert info.value.details["suggestions"] == []


@pytest.mark.parametrize("bad", ["", "   ", "-/_"])
def test_empty_names_are_unknown(bad: str) -> None:
    with pytest.raises(InvalidArgument):
        canonical_name(bad)


def test_non_string_name() -> None:
    with pytest.raises(InvalidArgument) as info:
        compute(16, b"x")  # type: ignore[arg-type]
    assert "int" in info.value.message


def test_catalogue_rows_are_in_width_order() -> None:
    """Sanity check on the data file itself: sorted by width, then name."""
    assert all((a.width, a.name) <= (b.width, b.name) for a, b in pairwise(FILE_MODELS))
