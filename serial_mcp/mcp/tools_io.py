"""I/O tools: read, write, transact, flush, capture_boot — thin: arguments → one engine operation."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from serial_mcp import messages
from serial_mcp.engine import dialog_ops, io_ops, results
from serial_mcp.engine.services import Services
from serial_mcp.mcp import params
from serial_mcp.mcp.callers import current
from serial_mcp.mcp.toolkit import ToolRegistry

FramesView = Literal["parsed", "raw", "both"]


def register(reg: ToolRegistry, svc: Services) -> None:
    @reg.tool(title="Read received data", description=messages.D_READ)
    async def read(
        connection_id: params.ConnId,
        from_: params.FromArg = None,
        cursor: params.CursorArg = None,
        timeout_ms: params.Timeout = None,
        idle_ms: params.IdleMs = None,
        max_bytes: params.MaxBytes = None,
        match: params.MatchArg = None,
        encoding: params.EncOut = None,
        protocol: params.Protocol = None,
        rx_framing: params.RxFraming = None,
        rx_parser: params.RxParser = None,
        max_frames: params.MaxFrames = None,
        respond: params.RespondArg = None,
        strip_ansi: Annotated[bool, Field(description=messages.P_STRIP_ANSI)] = False,
        screen: Annotated[dict[str, params.Int] | None, Field(description=messages.P_SCREEN)] = None,
        frames: Annotated[FramesView | None, Field(description=messages.P_FRAMES_VIEW)] = None,
    ) -> results.ReadResult:
        return await io_ops.read(
            svc,
            current(),
            connection_id,
            from_=from_,
            cursor=cursor,
            timeout_ms=timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            encoding=encoding,
            protocol=protocol,
            rx_framing=rx_framing,
            rx_parser=rx_parser,
            max_frames=max_frames,
            respond=respond,
            strip_ansi=strip_ansi,
            screen=screen,
            frames=frames,
        )

    @reg.tool(title="Write data", description=messages.D_WRITE, destructive=True, mutates=True)
    async def write(
        connection_id: params.ConnId,
        data: Annotated[str, Field(description=messages.P_DATA)] = "",
        encoding: params.EncIn = None,
        protocol: params.Protocol = None,
        tx_framing: params.TxFraming = None,
        pace: params.PaceArg = None,
        keys: Annotated[list[str] | None, Field(description=messages.P_KEYS)] = None,
        timeout_ms: params.WriteTimeout = None,
    ) -> results.WriteResult:
        return await io_ops.write(
            svc,
            current(),
            connection_id,
            data,
            encoding=encoding,
            protocol=protocol,
            tx_framing=tx_framing,
            pace=pace,
            keys=keys,
            timeout_ms=timeout_ms,
        )

    @reg.tool(
        title="Write then read the reply", description=messages.D_TRANSACT, destructive=True, mutates=True
    )
    async def transact(
        connection_id: params.ConnId,
        data: params.Data = "",
        encoding: Annotated[params.Enc | None, Field(description=messages.P_ENCODING_BOTH)] = None,
        cursor: params.CursorR = None,
        timeout_ms: params.TimeoutR = None,
        idle_ms: params.IdleR = None,
        max_bytes: params.MaxBytesR = None,
        match: params.MatchR = None,
        read_encoding: Annotated[params.Enc | None, Field(description=messages.P_READ_ENCODING)] = None,
        protocol: params.ProtocolR = None,
        rx_framing: params.RxFramingR = None,
        tx_framing: params.TxFraming = None,
        rx_parser: params.RxParserR = None,
        max_frames: params.MaxFramesR = None,
        pace: params.PaceArg = None,
        respond: params.RespondArg = None,
        read_echo: Annotated[bool, Field(description=messages.P_READ_ECHO)] = False,
        write_timeout_ms: params.WriteTimeout = None,
        steps: Annotated[list[dict[str, Any]] | None, Field(description=messages.P_STEPS)] = None,
        keys: Annotated[list[str] | None, Field(description=messages.P_KEYS)] = None,
        strip_ansi: Annotated[bool, params.SeeRead] = False,
        frames: Annotated[FramesView | None, params.SeeRead] = None,
    ) -> results.TransactResult:
        return await dialog_ops.transact(
            svc,
            current(),
            connection_id,
            data,
            steps=steps,
            keys=keys,
            strip_ansi=strip_ansi,
            frames=frames,
            encoding=encoding,
            cursor=cursor,
            timeout_ms=timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            read_encoding=read_encoding,
            protocol=protocol,
            rx_framing=rx_framing,
            tx_framing=tx_framing,
            rx_parser=rx_parser,
            max_frames=max_frames,
            pace=pace,
            respond=respond,
            read_echo=read_echo,
            write_timeout_ms=write_timeout_ms,
        )

    @reg.tool(
        title="Discard buffered data",
        description=messages.D_FLUSH,
        destructive=True,
        idempotent=True,
        mutates=True,
    )
    async def flush(
        connection_id: params.ConnId,
        target: Annotated[
            Literal["input", "output", "both"], Field(description=messages.P_FLUSH_TARGET)
        ] = "input",
        cursor: params.CursorArg = None,
    ) -> results.FlushResult:
        return await io_ops.flush(svc, current(), connection_id, target, cursor)

    @reg.tool(
        title="Reset the board and capture its boot output", description=messages.D_CAPTURE_BOOT, mutates=True
    )
    async def capture_boot(
        connection_id: params.ConnId,
        reset: Annotated[dict[str, Any] | None, Field(description=messages.P_RESET)] = None,
        timeout_ms: params.TimeoutR = None,
        idle_ms: params.IdleR = None,
        max_bytes: params.MaxBytesR = None,
        match: params.MatchR = None,
        encoding: params.EncOut = None,
        protocol: params.ProtocolR = None,
        rx_framing: params.RxFramingR = None,
        rx_parser: params.RxParserR = None,
        max_frames: params.MaxFramesR = None,
        respond: params.RespondArg = None,
        send: Annotated[str | None, Field(description=messages.P_BOOT_SEND)] = None,
    ) -> results.CaptureBootResult:
        return await io_ops.capture_boot(
            svc,
            current(),
            connection_id,
            reset=reset,
            timeout_ms=timeout_ms,
            idle_ms=idle_ms,
            max_bytes=max_bytes,
            match=match,
            encoding=encoding,
            protocol=protocol,
            rx_framing=rx_framing,
            rx_parser=rx_parser,
            max_frames=max_frames,
            respond=respond,
            send=send,
        )
