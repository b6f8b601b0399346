"""AT command parser: responses, finals, URCs, echo and text, on a realistic modem transcript."""

from __future__ import annotations

import pytest

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.parsers import AtCommandParser
from serial_mcp.core.parsers.at_command import split_values
from serial_mcp.core.presets import get_preset


@pytest.mark.parametrize(
    ("line", "fields", "final"),
    [
        (b"OK", {"kind": "final", "status": "OK", "success": True}, True),
        (b"ERROR", {"kind": "final", "status": "ERROR", "success": False}, True),
        (
            b"+CME ERROR: 10",
            {"kind": "final", "status": "+CME ERROR", "success": False, "error_code": 10},
            True,
        ),
        (
            b"+CME ERROR: SIM not inserted",
            {"kind": "final", "status": "+CME ERROR", "success": False, "error_text": "SIM not inserted"},
            True,
        ),
        (
            b"+CMS ERROR: 500",
            {"kind": "final", "status": "+CMS ERROR", "success": False, "error_code": 500},
            True,
        ),
        (b"NO ANSWER", {"kind": "final", "status": "NO ANSWER", "success": False}, True),
        (
            b"CONNECT 115200",
            {"kind": "final", "status": "CONNECT", "success": True, "detail": "115200"},
            True,
        ),
        (b"+CSQ: 21,99", {"kind": "response", "command": "+CSQ", "values": ["21", "99"]}, False),
        (
            b'+COPS: 0,0,"Vodafone, DE",7',
            {"kind": "response", "command": "+COPS", "values": ["0", "0", "Vodafone, DE", "7"]},
            False,
        ),
        (b"+CPIN: READY", {"kind": "response", "command": "+CPIN", "values": ["READY"]}, False),
        (
            b"^SYSINFO: 2,3,0,5,1",
            {"kind": "response", "command": "^SYSINFO", "values": ["2", "3", "0", "5", "1"]},
            False,
        ),
        (b'+CMTI: "SM",3', {"kind": "response", "command": "+CMTI", "values": ["SM", "3"]}, False),
        (b"RING", {"kind": "urc", "text": "RING"}, False),
        (b"NO CARRIER", {"kind": "urc", "text": "NO CARRIER"}, False),
        (b"AT+CSQ", {"kind": "echo", "command": "AT+CSQ"}, False),
        (b"at", {"kind": "echo", "command": "at"}, False),
        (b"Quectel", {"kind": "text", "text": "Quectel"}, False),
        (b"", {"kind": "text", "text": ""}, False),
        (b"OK\r\n", {"kind": "final", "status": "OK", "success": True}, True),
    ],
)
def test_classification(line: bytes, fields: dict[str, object], final: bool) -> None:
    parsed = AtCommandParser().parse(line)
    assert parsed.fields == fields
    assert parsed.final is final
    assert parsed.checksum_valid is None


def test_split_values_handles_quotes_and_empties() -> None:
    assert split_values('1,"a,b",,x') == ["1", "a,b", "", "x"]
    assert split_values("") == []
    assert split_values("a\nb,c") == ["a\nb", "c"]  # csv refuses a bare newline: plain split instead
    assert len(split_values('a\x00b,"c')) == 2


def test_transcript_through_the_preset_marks_the_final_line() -> None:
    preset = get_preset("at_command")
    decoder = StreamDecoder(preset.get("rx_framing"), preset.get("rx_parser"))
    stream = b"AT+CSQ\r\r\n+CSQ: 21,99\r\n\r\nOK\r\n\r\nRING\r\n"
    frames = [e for i in range(len(stream)) for e in decoder.feed(stream[i : i + 1])]
    assert all(isinstance(f, DecodedFrame) for f in frames)
    kinds = [(f.parsed or {}).get("kind") for f in frames if isinstance(f, DecodedFrame)]
    assert kinds == ["echo", "response", "final", "urc"]
    assert [f.final for f in frames if isinstance(f, DecodedFrame)] == [False, False, True, False]


def test_a_response_with_another_commands_prefix_is_a_urc() -> None:
    from serial_mcp.core.parsers.at_command import AtCommandParser

    p = AtCommandParser()
    kinds = [p.parse(line).fields["kind"] for line in (b"AT+CSQ", b"+CSQ: 20,99", b"+CREG: 1", b"OK")]
    assert kinds == ["echo", "response", "urc", "final"]
    q = AtCommandParser()  # no echo (ATE0): nothing to tell replies from URCs by
    assert q.parse(b"+CREG: 1").fields["kind"] == "response"
    assert p.parse(b"AT+CSQ;+CREG?").fields["kind"] == "echo"
    assert p.parse(b"+CREG: 0,1").fields["kind"] == "response"
