"""XMODEM and YMODEM file transfer as sans-IO state machines (bytes in; events and bytes out).

Written against the published specifications, in Chuck Forsberg's compendium
"XMODEM/YMODEM Protocol Reference" (Omen Technology, 1985/1988; ``YMODEM.TXT``), which holds:

* Ward Christensen, "XMODEM Protocol Overview" (1982): ``SOH blk ~blk data[128] sum``,
  block numbers from 1 wrapping 0xFF -> 0x00, ACK/NAK, EOT, 10 retries, the receiver's
  10-second NAK timeout and 1-second in-block timeout, "purge" before a NAK;
* John Byrns, "XMODEM/CRC Overview" (1985): the receiver asks for CRC-16 with ``C``
  (resent every 3 seconds, falling back to NAK and the checksum), CRC sent high byte
  first; the CRC is CRC-16/XMODEM (poly 0x1021, init 0), computed by ``core.checksums``;
* Forsberg's extensions: 1024-byte blocks introduced by STX (mixable with 128-byte ones),
  graceful abort by two consecutive CAN, and YMODEM batch: block 0 carries
  ``name NUL size [mtime [mode]]`` (decimal size, octal fields, the rest NUL), each file
  ends ``EOT`` / ``NAK`` / ``EOT`` / ``ACK``, and an all-NUL block 0 ends the batch.

There is a ``xmodem`` package on PyPI, but its API is blocking (``getc``/``putc``
callbacks with ``time.sleep``) and it has no YMODEM, so it would need a thread per
transfer and still not cover the issue; these machines own no I/O and no clock instead.

Driving a machine: write ``next_output()`` to the port, read with ``timeout`` seconds as
the deadline, pass what arrives to ``receive_bytes`` or, if nothing came in time, call
``on_timeout()``; repeat until a :class:`Done` event (``done`` is then True). Each call
returns the events it caused: :class:`Progress` after every acknowledged block,
:class:`Retry` for every retransmission or rejected block, :class:`FileStarted` /
:class:`FileSent` / :class:`FileReceived` around YMODEM files, and :class:`Done` with the
:class:`TransferResult`. ``cancel()`` aborts from this side (CAN x5 and BS x5, as YAM
does); two consecutive CAN from the peer abort from the other side.

Decisions where the specifications leave room:

* The sender follows the receiver's handshake for the check (``C`` -> CRC-16, NAK ->
  checksum); ``mode`` picks the block size ("checksum"/"crc": 128, "1k": 1024). A 1k sender
  facing a checksum receiver falls back to 128-byte blocks. In 1k mode the tail goes in
  128-byte blocks once 896 bytes or fewer remain, so padding stays under 128 bytes.
* Padding: the last block is padded with 0x1A (CPMEOF). YMODEM receivers trim to the size
  in block 0. XMODEM has no size, and a trailing 0x1A may be real data in a binary file, so
  :class:`XmodemReceiver` keeps the padding unless told the ``size``.
* An empty XMODEM transfer is a bare EOT; an empty YMODEM file has block 0 and an EOT.
* The XMODEM receiver ACKs the first EOT (Christensen); the YMODEM receiver NAKs the first
  and ACKs the second, as in Forsberg's batch session figure, so a line hit that looks
  like EOT cannot truncate a file. Both senders resend EOT on anything but ACK.
* Purge: bytes that arrived after a bad block or a reply that was already answered are
  stale, so the rest of that chunk is dropped; noise where a block should start drops
  everything until the next timeout, then NAKs (the spec's "wait for the line to clear").
* A copy of a block or EOT read together with the one it repeats (so before the answer went
  out) is counted as a retry but not answered again: the sender cannot have missed an answer
  not yet sent, and an ACK carries no block number, so a second one could be read as the
  answer to the sender's next packet (a file reported sent that never arrived).

Each machine is a transition table, as in h11: a mapping ``(state, input) -> entry`` where the
input is a reply byte (ACK, NAK, C, noise), a byte outside a block (block start, EOT, CAN,
noise), a complete block classified (bad number, bad check, the next one, a repeat, a header,
out of sequence) or a timeout, and the entry is a rule (an action and the states it may lead
to), an explicit ignore, or a refusal that ends the transfer with a protocol error. Two
consecutive CAN abort in every state before the table is consulted. The tables are checked
complete when their modules are imported; ``state`` says where a machine is.

Layout: ``core.xmodem_wire`` (control bytes, blocks, block 0, events and results),
``core.xmodem_table`` (rules, ignores, refusals and the completeness check),
``core.xmodem_machine`` (what both directions share), ``core.xmodem_sender`` (the XMODEM and
YMODEM sender tables) and ``core.xmodem_receiver`` (the receiver table). This module gives the
machines and what a driver of them handles; the wire's bytes and the other events are in
``core.xmodem_wire``.
"""

from __future__ import annotations

from serial_mcp.core.xmodem_receiver import XmodemReceiver, YmodemReceiver
from serial_mcp.core.xmodem_sender import XmodemSender, YmodemSender
from serial_mcp.core.xmodem_wire import Done, Progress, TransferResult, YmodemFile

__all__ = [
    "Done",
    "Progress",
    "TransferResult",
    "XmodemReceiver",
    "XmodemSender",
    "YmodemFile",
    "YmodemReceiver",
    "YmodemSender",
]
