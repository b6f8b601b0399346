"""Modbus RTU framing: ``address · function · data · CRC-16/MODBUS (little-endian)``.

RTU has no sync word and no length field, so a frame's length comes from its function code
(requests and responses of functions 1-6, 15, 16 and 23; exceptions ``fc | 0x80`` are 5
bytes). Where a function has a request and a response shape of different lengths, the
shorter one whose CRC checks is taken, else the longer one once it has arrived. A frame
whose CRC fails is taken at its function's length and emitted with ``checksum_valid``
False (``validate`` drops and counts it).

The standard's own rule - a frame ends at 3.5 character times of silence - cannot be seen
in a byte stream (and USB adapters' latency timers blur it: they hand one reply over in packets
1-16 ms apart), so it only ends what nothing else can:
:meth:`~serial_mcp.core.framing.scan.ScanDecoder.silence` tells the decoder the line went
quiet (see :func:`silence_seconds` for the threshold at a baud rate); then a frame of an
unknown function ends there, while a frame whose length its function code and byte count give
keeps waiting for its bytes, whatever the gaps. A torn frame whose rest never comes is given up
when a frame that starts after the silence checks, or when its own CRC fails (its bytes are
counted in ``bytes_skipped``). Without silence, an unknown function's frame ends at the first
length whose CRC checks (at most 256 bytes); end of stream counts as silence.

``Frame.data`` is the address and PDU without the CRC (``include_terminators``: the raw
frame), which is exactly what TX framing ``modbus_rtu`` takes: it appends the CRC.

In a ``transact`` serial-mcp is the master, and the framing is told the request it sent
(``reply_to``, the request's bytes): a frame from that address with that function (or its
exception ``fc | 0x80``) is the response, so its length comes from the response's shape alone
and a CRC that fails at that length is a bad frame at once, not a request still arriving. The
request itself (echoed on an RS-485 bus) is one frame.
"""

from __future__ import annotations

from typing import Final

from serial_mcp import messages
from serial_mcp.core import checksums
from serial_mcp.core.framing.base import Frame, crc_text
from serial_mcp.core.framing.modbus_rtu_probe import EndIndex
from serial_mcp.core.framing.scan import NEED, REJECT, ScanDecoder
from serial_mcp.errors import InvalidArgument

MAX_ADU: Final = 256
_MAX_ADDRESS: Final = 247  # 248-255 are reserved: never the first byte of a frame
_crc = checksums.function("crc16_modbus")


def silence_seconds(baudrate: int, bits_per_char: int = 11) -> float:
    """The 3.5-character inter-frame silence at ``baudrate`` (fixed 1.75 ms above 19200 baud)."""
    if baudrate > 19200:
        return 0.00175
    return 3.5 * bits_per_char / baudrate


def _crc_ok(work: bytes, s: int, e: int) -> bool:
    return _crc(work[s : e - 2]) == work[e - 2] | (work[e - 1] << 8)


#: Responses whose length is fixed, by function (address, function, data, CRC).
_FIXED_RESPONSE: Final = {5: 8, 6: 8, 7: 5, 8: 8, 11: 8, 15: 8, 16: 8, 22: 10}
#: Responses whose third byte counts the data bytes that follow it.
_COUNTED_RESPONSE: Final = frozenset({1, 2, 3, 4, 12, 17, 20, 21, 23})


def response_length(work: bytes, s: int, n: int) -> int | None:
    """The length of the response (or exception) starting at ``work[s]``: NEED (0) while its byte
    count has not arrived; None for a function whose response shape is not known."""
    if n - s < 2:
        return NEED
    fc = work[s + 1]
    if fc & 0x80:
        return 5
    fixed = _FIXED_RESPONSE.get(fc)
    if fixed is not None:
        return fixed
    if fc in _COUNTED_RESPONSE:
        return 5 + work[s + 2] if n - s >= 3 else NEED
    return None


class ModbusRtuRule:
    """Function-code-aware Modbus RTU frame lengths (a FrameRule)."""

    __slots__ = ("_index", "_probed", "include_terminators", "request")
    syncs: Final = tuple(bytes([a]) for a in range(_MAX_ADDRESS + 1))
    resync_on_bad: Final = False

    def __init__(self, include_terminators: bool = False, request: bytes = b"") -> None:
        self.include_terminators = include_terminators
        self.request = request  # the request a transact sent: its reply's shape is known
        # The bytes of the last unknown-function candidate left waiting: no length up to theirs
        # checked, so when more bytes arrive behind the same ones only the new lengths are tried.
        self._probed = b""
        self._index: EndIndex | None = None  # the checking ends of the work string last probed

    @staticmethod
    def candidates(work: bytes, s: int, n: int) -> list[int] | None:
        """Possible frame lengths for the function at ``work[s+1]`` (shortest first); [] when more
        bytes are needed to tell; None for an unknown function."""
        if n - s < 2:
            return []
        fc = work[s + 1]
        if fc & 0x80:
            return [5]
        if fc in (5, 6):
            return [8]
        if fc in (1, 2, 3, 4):
            return sorted({8, 5 + work[s + 2]}) if n - s >= 3 else []
        if fc in (15, 16):
            return sorted({8, 9 + work[s + 6]}) if n - s >= 7 else []
        if fc == 23:
            if n - s < 3:
                return []
            response = 5 + work[s + 2]
            if n - s < 11:  # the request's byte count has not arrived: only a checked response is sure
                return [response] if n - s >= response and _crc_ok(work, s, s + response) else []
            return sorted({response, 13 + work[s + 10]})
        return None

    def _reply(self, work: bytes, s: int, n: int) -> int | None:
        """With a request sent (``reply_to``): the length of its echo or of its response at ``s``
        (NEED while it cannot tell yet); None for any other frame."""
        request = self.request
        if n - s < 2 or work[s] != request[0] or work[s + 1] & 0x7F != request[1]:
            return None
        if work.startswith(request, s):
            return len(request)  # our own request, heard back on the bus
        length = response_length(work, s, n)
        if length is None:
            return None
        if (
            length
            and n - s < len(request)
            and request.startswith(work[s:n])
            and (s + length > n or not _crc_ok(work, s, s + length))
        ):
            return NEED  # still the echo of our request, or the reply: more bytes tell
        return length

    def measure(self, work: bytes, s: int, n: int, final: bool) -> int:
        """The frame length (see the module docstring), NEED or REJECT."""
        if self.request and (reply := self._reply(work, s, n)) is not None:
            return reply
        lengths = self.candidates(work, s, n)
        if lengths is None:
            return self._unknown(work, s, n, final)
        if not lengths:
            return NEED
        for length in lengths:
            if s + length > n:
                return length  # wait for it (a shorter one did not check)
            if _crc_ok(work, s, s + length):
                return length
        return lengths[-1] if lengths[-1] <= MAX_ADU else REJECT

    def _unknown(self, work: bytes, s: int, n: int, final: bool) -> int:
        """The first length whose CRC checks. A fresh candidate asks the work string's
        :class:`~serial_mcp.core.framing.modbus_rtu_probe.EndIndex` (every length in one look-up);
        one still waiting for bytes is checked only at the lengths that have arrived since (whether
        the shorter ones check depends only on the bytes)."""
        top = min(n - s, MAX_ADU)
        probed = self._probed
        if probed and work.startswith(probed, s):
            for length in range(len(probed) + 1, top + 1):
                if _crc_ok(work, s, s + length):
                    return length
        elif top >= 4:
            index = self._index
            if index is None or index.work is not work:
                index = self._index = EndIndex(work)
            e = index.first_end(s, s + 4, s + top)
            if e is not None:
                return e - s
        if final:
            return n - s if 4 <= n - s <= MAX_ADU else REJECT
        if n - s >= MAX_ADU:
            return REJECT
        if top >= 4:
            self._probed = work[s : s + top]
        return NEED

    def frame(self, work: bytes, s: int, e: int, base: int) -> Frame | None:
        """The address+PDU (or the raw frame) with the CRC's verdict."""
        computed, received = _crc(work[s : e - 2]), work[e - 2] | (work[e - 1] << 8)  # one CRC a frame
        data = work[s:e] if self.include_terminators else work[s : e - 2]
        if computed == received:
            return Frame(data, base + s, base + e, True)
        return Frame(data, base + s, base + e, False, crc_text(computed, received, 2))


class ModbusRtuDecoder(ScanDecoder):
    """RX framing ``modbus_rtu``."""

    __slots__ = ("_rule",)

    def __init__(self, include_terminators: bool = False, offset: int = 0, request: bytes = b"") -> None:
        self._rule = ModbusRtuRule(include_terminators, request)
        super().__init__([self._rule], offset)

    def damaged_pending(self) -> int | None:
        """The offset of a waiting frame whose shorter shape already failed its CRC (a damaged
        response, or a request still arriving: only more bytes or their absence tell), else None."""
        frame = self.damaged_frame()
        return None if frame is None else frame.start

    def damaged_frame(self) -> Frame | None:
        """That waiting frame at its shorter shape, bad, with its CRCs (see :meth:`damaged_pending`)."""
        work = self.pending_bytes()
        if len(work) < 4:
            return None
        lengths = [n for n in self._rule.candidates(work, 0, len(work)) or () if n <= len(work)]
        if not lengths:
            return None
        return self._rule.frame(work, 0, lengths[-1], self.pending_start)


def modbus_rtu_encode(adu: bytes) -> bytes:
    """``address + PDU`` followed by its CRC-16/MODBUS, low byte first."""
    if len(adu) < 2:
        raise InvalidArgument(messages.MODBUS_RTU_TOO_SHORT.format(length=len(adu)))
    return adu + _crc(adu).to_bytes(2, "little")


class ModbusRtuEncoder:
    """TX framing ``modbus_rtu``: each payload is the binary address + PDU."""

    __slots__ = ()

    def encode(self, payload: bytes) -> bytes:
        """See :func:`modbus_rtu_encode`."""
        return modbus_rtu_encode(payload)
