"""Modbus RTU and ASCII against a real pymodbus slave on a PTY pair, decoded by the modbus presets.

The slave is pymodbus's own ``ModbusSerialServer`` in a subprocess, serving the PTY's slave side
as a serial port; the test is the master on the PTY's master side: it frames each request with
``tx_framing`` of the preset, and decodes the reply with the preset's ``StreamDecoder``.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
import time
import tty
from collections.abc import Iterator
from typing import Any

import pytest

from serial_mcp.core.decode import DecodedFrame, StreamDecoder
from serial_mcp.core.framing import build_encoder
from serial_mcp.core.presets import get_preset

pytest.importorskip("pymodbus")

# Holding registers 0.. = 100, 101, ...; input registers 0.. = 200, 201, ...; 50 of each.
SLAVE = textwrap.dedent(
    """
    import asyncio, sys, warnings
    warnings.simplefilter("ignore")
    from pymodbus import FramerType
    from pymodbus.datastore import ModbusDeviceContext, ModbusSequentialDataBlock, ModbusServerContext
    from pymodbus.server import ModbusSerialServer

    async def main():
        block = lambda values: ModbusSequentialDataBlock(1, values)  # pymodbus maps address 0 to 1
        device = ModbusDeviceContext(
            hr=block([100 + i for i in range(50)]),
            ir=block([200 + i for i in range(50)]),
            co=block([1, 0, 1, 1, 0, 0, 0, 1] * 4),
            di=block([0, 1] * 16),
        )
        context = ModbusServerContext(devices={1: device}, single=False)
        server = ModbusSerialServer(context, framer=FramerType(sys.argv[2]), port=sys.argv[1], baudrate=115200)
        await server.serve_forever(background=True)
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)
REPLY_WAIT_S = 10.0  # a bound on a loaded machine, not a performance claim


class Master:
    """The host side of the PTY: send framed requests, read until the preset decodes a frame."""

    def __init__(self, protocol: str) -> None:
        self.fd, slave = os.openpty()
        tty.setraw(self.fd)
        tty.setraw(slave)
        self._slave_fd = slave
        framer = "rtu" if protocol == "modbus_rtu" else "ascii"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SLAVE, os.ttyname(slave), framer],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until the server has opened the port
        assert line.strip() == "ready", self.proc.stderr.read() if self.proc.stderr else line
        preset = get_preset(protocol)
        self.preset = preset
        self.encoder = build_encoder(preset.get("tx_framing"))
        self.raw = bytearray()  # every reply byte, for the tests that replay them

    def new_decoder(self) -> StreamDecoder:
        return StreamDecoder(self.preset.get("rx_framing"), self.preset.get("rx_parser"))

    def transact(self, adu_hex: str) -> tuple[DecodedFrame, bytes]:
        """Send one request (address+PDU in hex); the decoded reply and its raw bytes."""
        os.write(self.fd, self.encoder.encode(bytes.fromhex(adu_hex)))
        decoder = self.new_decoder()
        raw = bytearray()
        deadline = time.monotonic() + REPLY_WAIT_S
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                break
            chunk = os.read(self.fd, 4096)
            raw += chunk
            frames = [e for e in decoder.feed(chunk) if isinstance(e, DecodedFrame)]
            if frames:
                assert len(frames) == 1 and decoder.frames_dropped == 0
                return frames[0], bytes(raw)
        raise AssertionError(f"no decoded reply to {adu_hex} within {REPLY_WAIT_S} s; got {raw.hex()}")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        os.close(self.fd)
        os.close(self._slave_fd)


@pytest.fixture(scope="module")
def rtu() -> Iterator[Master]:
    master = Master("modbus_rtu")
    yield master
    master.close()


def fields(frame: DecodedFrame) -> dict[str, Any]:
    assert frame.parsed is not None and frame.checksum_valid is True
    return frame.parsed


@pytest.mark.slow
def test_read_holding_registers(rtu: Master) -> None:
    reply, _ = rtu.transact("010300000003")
    assert fields(reply)["registers"] == [100, 101, 102]
    assert fields(reply)["function_name"] == "read_holding_registers"


def test_read_input_registers(rtu: Master) -> None:
    reply, _ = rtu.transact("010400020002")
    assert fields(reply)["registers"] == [202, 203]


def test_read_coils(rtu: Master) -> None:
    reply, _ = rtu.transact("010100000008")
    assert fields(reply)["bits"] == [1, 0, 1, 1, 0, 0, 0, 1]


def test_write_single_then_multiple_and_read_back(rtu: Master) -> None:
    echo, _ = rtu.transact("01060010002A")
    assert fields(echo)["start"] == 0x10 and fields(echo)["value"] == 42
    done, _ = rtu.transact("0110001100020400070008")
    assert fields(done)["direction"] == "response" and fields(done)["quantity"] == 2
    reply, _ = rtu.transact("010300100003")
    assert fields(reply)["registers"] == [42, 7, 8]


def test_exception_reply(rtu: Master) -> None:
    reply, _ = rtu.transact("01030000007D")  # 125 registers: past the 50 the slave has
    assert fields(reply)["exception"] is True
    assert fields(reply)["exception_code"] == 2


def test_a_function_without_a_known_length(rtu: Master) -> None:
    reply, _ = rtu.transact("0107")  # read exception status: framed by its CRC
    assert fields(reply)["function"] == 7


def test_a_crc_corrupted_reply_is_counted_and_dropped(rtu: Master) -> None:
    _, raw = rtu.transact("010300000002")
    corrupted = raw[:-1] + bytes([raw[-1] ^ 0x01])
    _, good = rtu.transact("010300000001")
    decoder = rtu.new_decoder()
    frames = decoder.feed(corrupted + good)
    assert [(f.parsed or {})["registers"] for f in frames if isinstance(f, DecodedFrame)] == [[100]]
    assert decoder.frames_dropped == 1


def test_a_reply_split_across_reads(rtu: Master) -> None:
    _, raw = rtu.transact("010300050004")
    for cut in range(1, len(raw)):
        decoder = rtu.new_decoder()
        assert decoder.feed(raw[:cut]) == []
        (frame,) = decoder.feed(raw[cut:])
        assert isinstance(frame, DecodedFrame) and fields(frame)["registers"] == [105, 106, 107, 108]


def test_modbus_ascii_slave_registers_decoded() -> None:
    master = Master("modbus_ascii")
    try:
        reply, raw = master.transact("010300010002")
        assert raw.startswith(b":") and raw.endswith(b"\r\n")
        assert fields(reply)["registers"] == [101, 102]
    finally:
        master.close()
