"""Parameter types shared by the tools: one definition, one description (from messages.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Strict

from serial_mcp import messages

# Numbers are strict: a JSON boolean (or a string) where a number is expected is invalid_argument,
# never silently 1 or 0.
Int = Annotated[int, Strict()]
Number = Annotated[float, Strict()]

Enc = Literal["utf8", "hex", "base64"]
ConnId = str  # self-explanatory: every tool says where it comes from (open)
Timeout = Annotated[Int | None, Field(description=messages.P_TIMEOUT_MS)]
IdleMs = Annotated[Int | None, Field(description=messages.P_IDLE_MS)]
MaxBytes = Annotated[Int | None, Field(description=messages.P_MAX_BYTES)]
MaxFrames = Annotated[Int | None, Field(description=messages.P_MAX_FRAMES)]
MatchArg = Annotated[dict[str, Any] | str | None, Field(description=messages.P_MATCH)]
CursorArg = Annotated[str | None, Field(description=messages.P_CURSOR)]
FromArg = Annotated[Int | str | None, Field(alias="from", description=messages.P_FROM)]
EncOut = Annotated[Enc | None, Field(description=messages.P_ENCODING_OUT)]
EncIn = Annotated[Enc | None, Field(description=messages.P_ENCODING_IN)]
Data = Annotated[str, Field(description=messages.P_DATA)]
Protocol = Annotated[str | None, Field(description=messages.P_PROTOCOL)]
RxFraming = Annotated[dict[str, Any] | None, Field(description=messages.P_RX_FRAMING)]
TxFraming = Annotated[dict[str, Any] | None, Field(description=messages.P_TX_FRAMING)]
RxParser = Annotated[dict[str, Any] | None, Field(description=messages.P_RX_PARSER)]
PaceArg = Annotated[dict[str, Int] | None, Field(description=messages.P_PACE)]
BaudRate = Int | None
DataBits = Literal[5, 6, 7, 8] | None
ParityArg = Annotated[Literal["none", "even", "odd", "mark", "space"] | None, Field()]
StopBits = Number | None
FlowControl = Annotated[Literal["none", "software", "hardware"] | None, Field()]

# The same read options on transact and capture_boot: described once, on read.
SeeRead = Field()  # described once, on read (the tool descriptions say "read options as in read")
CursorR = Annotated[str | None, SeeRead]
TimeoutR = Annotated[Int | None, SeeRead]
IdleR = Annotated[Int | None, SeeRead]
MaxBytesR = Annotated[Int | None, SeeRead]
MaxFramesR = Annotated[Int | None, SeeRead]
MatchR = Annotated[dict[str, Any] | str | None, SeeRead]
ProtocolR = Annotated[str | None, SeeRead]
RxFramingR = Annotated[dict[str, Any] | None, SeeRead]
RxParserR = Annotated[dict[str, Any] | None, SeeRead]
WriteTimeout = Annotated[Int | None, Field(description=messages.P_WRITE_TIMEOUT_MS)]
RespondArg = Annotated[dict[str, Any] | None, Field(description=messages.P_RESPOND)]
