"""``serial-mcp ports``, ``identify``, ``send`` and ``read``: one-shot work from a shell, on the tools'
own operations.

Each is one tool call on a fresh engine: ``ports`` is ``list_ports``; ``identify PORT…`` is
``identify`` (one line per port on stdout, listening only unless ``--probe``); ``send PORT DATA`` is
``open`` + ``transact`` (the reply is read from a mark taken before the write, so a fast answer is
never missed; without ``--expect`` the read ends 100 ms after the reply goes quiet, or at the
timeout when nothing comes); ``read PORT`` is ``open`` + ``read`` from the moment the port opened.
The port is closed before the command ends.

Output: the data on stdout (the reply's exact bytes, or one line per frame with ``--protocol``),
the tool's one-line summary on stderr. With ``--json`` stdout is the tool's result model as JSON,
every field (nulls and defaults too, which ``structuredContent`` leaves out; an error is
``{"error": {"code", "message"}}``, as the tool returns it).

Exit codes: 0 done; 1 ``--expect`` did not match in time (``read`` without ``--expect``: nothing
arrived); 2 a usage error (a bad flag, escape, pattern or protocol); 3 the port (not found, busy,
not allowed, failed; ``send`` in read-only mode, refused before the port is opened; ``identify``:
any port it could not open, every port still answered on its line).

Every one runs under the settings the server runs under (``commands/doors.py``): ``--read-only``,
``--allowlist``, ``--enable-url-scheme`` and ``--capture-dir``, from flags, environment or config file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, NamedTuple, TextIO, TypeVar

import anyio

from serial_mcp import answers, messages
from serial_mcp.api import MAX_READ_BYTES, EngineConnection, PortPolicy
from serial_mcp.commands.doors import engine
from serial_mcp.commands.output import announce, for_person, status
from serial_mcp.core.encoding import decode_input, encode_output
from serial_mcp.core.escapes import unescape
from serial_mcp.engine.results import CaptureBootResult, Frame, ListPortsResult, ReadResult, TransactResult
from serial_mcp.engine.results_identify import IdentifyResult
from serial_mcp.errors import InvalidArgument, SerialMcpError
from serial_mcp.serial.read_request import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT_MS

EXIT_OK: Final = 0
EXIT_NO_MATCH: Final = 1
EXIT_USAGE: Final = 2
EXIT_PORT: Final = 3

R = TypeVar("R")
Result = ListPortsResult | IdentifyResult | TransactResult | ReadResult | CaptureBootResult
W = TypeVar("W", TransactResult, CaptureBootResult)
# a writing tool's call (given the read's options) and where its result keeps the reply
Exchange = tuple[Callable[[EngineConnection, dict[str, Any]], Awaitable[W]], Callable[[W], ReadResult]]


def run_ports(policy: PortPolicy, as_json: bool, out: TextIO) -> int:
    async def go() -> tuple[Result, int]:
        async with engine(policy) as eng:
            return await eng.list_ports(), EXIT_OK

    return _run(go, as_json, out)


def run_identify(
    policy: PortPolicy, ports: list[str], listen_ms: int, probe: bool, as_json: bool, out: TextIO
) -> int:
    async def go() -> tuple[Result, int]:
        async with engine(policy) as eng:
            result = await eng.identify(ports=ports or None, listen_ms=listen_ms, probe=probe)
        for answer in result.ports:  # the engine closes them as the command ends: none is kept
            answer.connection_id = answer.held = None
        failed = any(answer.error is not None for answer in result.ports)  # each still has its line
        return result, EXIT_PORT if failed else EXIT_OK

    return _run(go, as_json, out)


class How(NamedTuple):
    """A one-shot's flags after PORT (and DATA): how to read the reply and where to show it."""

    expect: str | None
    timeout_ms: int | None
    protocol: str | None
    baud_rate: int | None
    max_bytes: int | None
    as_json: bool
    out: TextIO


def run_send(policy: PortPolicy, port: str, data: str, how: How) -> int:
    def transact() -> Exchange[TransactResult]:
        payload = unescape(data).hex()  # a bad escape is a usage error before the port is touched
        # the exact bytes the escapes denote; the reply as the tool shows it by default (hex if not text)
        extra = {"encoding": "hex", "read_encoding": "utf8"}
        return lambda conn, reading: conn.transact(payload, **extra, **reading), lambda r: r.reply

    return _write_then_show(policy, port, transact, how)


def run_power_cycle(policy: PortPolicy, port: str, data: str | None, off_ms: int, how: How) -> int:
    """``send labgrid://PLACE [DATA] --power-cycle``: ``capture_boot`` with the place's power cycled
    (off, ``off_ms``, arm, on), then DATA sent if given; the boot output is the reply (issue 25)."""

    def capture_boot() -> Exchange[CaptureBootResult]:
        try:  # a bad escape or non-text DATA: a usage error before the port is touched
            payload = unescape(data).decode("utf-8") if data else None
        except UnicodeDecodeError:
            raise InvalidArgument(messages.CLI_POWER_CYCLE_DATA) from None
        reset = {"power": "cycle", "off_ms": off_ms}
        return lambda conn, reading: conn.capture_boot(
            reset=reset, send=payload, encoding="utf8", **reading
        ), (lambda r: r.read)

    return _write_then_show(policy, port, capture_boot, how)


def run_read(
    policy: PortPolicy,
    port: str,
    expect: str | None,
    timeout_ms: int | None,
    protocol: str | None,
    baud_rate: int | None,
    max_bytes: int | None,
    as_json: bool,
    out: TextIO,
) -> int:
    limit = _bound(max_bytes, expect)

    async def call(conn: EngineConnection) -> ReadResult:
        return await read_through_overruns(conn, expect, timeout_ms, limit, protocol)

    async def go() -> tuple[Result, int]:
        result = await _on_port(policy, port, baud_rate, call)
        got = result.next_offset > result.from_offset or bool(result.frames)
        return result, _shown(result, expect, limit, as_json, out, got=got)

    return _run(go, as_json, out)


async def read_through_overruns(
    conn: EngineConnection,
    expect: str | None,
    timeout_ms: int | None,
    limit: int | None,
    protocol: str | None,
) -> ReadResult:
    """One read that a flood does not cut short: where the ring overran the read, the next read goes
    on from the oldest byte still held (the gap counted in ``bytes_lost``), until the pattern, the read
    cap or the timeout, as a user running ``read`` expects; the parts come back as one result."""
    cap = DEFAULT_MAX_BYTES if limit is None else limit
    wait_ms = DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    deadline = time.monotonic() + wait_ms / 1000
    parts = [await conn.read(match=expect, timeout_ms=timeout_ms, max_bytes=limit, protocol=protocol)]
    got = parts[0].next_offset - parts[0].from_offset
    while parts[-1].stop_reason == "overrun" and got < cap:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            break
        part = await conn.read(match=expect, timeout_ms=left_ms, max_bytes=cap - got, protocol=protocol)
        parts.append(part)
        got += part.next_offset - part.from_offset
    return _joined(parts)


def _joined(parts: list[ReadResult]) -> ReadResult:
    """Reads one after another (each after the gap the last one's overrun left) as one result."""
    if len(parts) == 1:
        return parts[0]
    last = parts[-1]
    chunks = [decode_input(p.data, p.encoding) for p in parts]
    data, encoding = encode_output(b"".join(chunks), "hex" if last.encoding == "hex" else "utf8")
    before = sum(len(c) for c in chunks[:-1])
    frames = [f for p in parts for f in p.frames or []] if any(p.frames is not None for p in parts) else None
    events = [e for p in parts for e in p.events or []] or None
    return last.model_copy(
        update={
            "data": data,
            "encoding": encoding,
            "from_offset": parts[0].from_offset,
            "bytes_lost": sum(p.bytes_lost for p in parts),
            "frames": frames,
            "frames_dropped": sum(p.frames_dropped for p in parts),
            "events": events,
            "match_index": None if last.match_index is None else before + last.match_index,
        }
    )


def _bound(max_bytes: int | None, expect: str | None) -> int | None:
    """The read's ``max_bytes``: as given; with ``--expect`` the most a read takes (the pattern may
    come after the tool's default 64 KiB); otherwise the tool's default."""
    if max_bytes is not None:
        return max_bytes
    return MAX_READ_BYTES if expect is not None else None


def _shown(
    read: ReadResult, expect: str | None, limit: int | None, as_json: bool, out: TextIO, *, got: bool
) -> int:
    """Show what a one-shot read (unless ``--json``), say if ``max_bytes`` cut it short, and give its
    exit status: with ``--expect`` whether it matched, else ``got`` (a write's reply: always)."""
    if not as_json:
        _show_read(read, out)
    _say_if_cut(read, expect, limit)
    ok = read.matched if expect is not None else got
    return EXIT_OK if ok else EXIT_NO_MATCH


def _say_if_cut(result: ReadResult, expect: str | None, limit: int | None) -> None:
    """A read that ended at ``max_bytes`` before the pattern came says so (not a plain "no match")."""
    if expect is not None and not result.matched and result.stop_reason == "max_bytes":
        n = limit if limit is not None else result.next_offset - result.from_offset
        status(messages.CLI_EXPECT_CUT.format(n=n, pattern=expect, max=MAX_READ_BYTES))


# --- the shared shape ----------------------------------------------------------------------------------


async def _on_port(
    policy: PortPolicy,
    port: str,
    baud_rate: int | None,
    call: Callable[[EngineConnection], Awaitable[R]],
    *,
    writes: bool = False,
) -> R:
    async with engine(policy) as eng:
        if writes:  # refused before the port is opened: opening alone may reset a board (DTR)
            eng.services.policy.require_writable("send")
        conn = await eng.open(port, baud_rate=baud_rate)
        try:
            return await call(conn)
        finally:
            await conn.close()


def _write_then_show(policy: PortPolicy, port: str, exchange: Callable[[], Exchange[W]], how: How) -> int:
    """``send``'s shape: ``exchange()`` checks DATA (before the port is touched) and gives the tool call
    and where its reply is; the call reads as ``--expect`` / ``--timeout-ms`` / ``--protocol`` say."""
    limit = _bound(how.max_bytes, how.expect)
    reading: dict[str, Any] = {
        "match": how.expect, "timeout_ms": how.timeout_ms, "max_bytes": limit, "protocol": how.protocol
    }  # fmt: skip

    async def go() -> tuple[Result, int]:
        call, reply_of = exchange()
        result = await _on_port(policy, port, how.baud_rate, lambda conn: call(conn, reading), writes=True)
        return result, _shown(reply_of(result), how.expect, limit, how.as_json, how.out, got=True)

    return _run(go, how.as_json, how.out)


def _run(go: Callable[[], Awaitable[tuple[Result, int]]], as_json: bool, out: TextIO) -> int:
    try:
        result, code = anyio.run(go)
    except BrokenPipeError:  # stdout's reader left (``| head``): not the port's failure
        raise
    except SerialMcpError as exc:
        if as_json:
            announce(
                out, json.dumps({"error": {"code": exc.code, "message": exc.message}}, ensure_ascii=False)
            )
        status(messages.CLI_ONESHOT_FAILED.format(message=for_person(exc.message)))
        return EXIT_USAGE if exc.code == "invalid_argument" else EXIT_PORT
    except OSError as exc:  # an OS failure the engine did not name: still the port's
        if as_json:
            announce(
                out, json.dumps({"error": {"code": "io_error", "message": str(exc)}}, ensure_ascii=False)
            )
        status(messages.CLI_ONESHOT_FAILED.format(message=exc))
        return EXIT_PORT
    if as_json:
        announce(out, json.dumps(answers.full(result), ensure_ascii=False))
    elif isinstance(result, ListPortsResult):
        _show_ports(result, out)
    elif isinstance(result, IdentifyResult):  # its lines are the answer: stdout, nothing more on stderr
        announce(out, result.summary())
        return code
    status(_summary(result))
    if isinstance(result, ListPortsResult) and result.lab_error:  # said with or without --json
        status(messages.CLI_PORTS_LAB_ERROR.format(error=for_person(result.lab_error)))
    return code


def _summary(result: Result) -> str:
    if isinstance(result, ListPortsResult):  # its summary lists every port: stdout has them already
        return messages.CLI_PORTS_FOUND.format(n=len(result.ports))
    return result.summary()


def _show_ports(result: ListPortsResult, out: TextIO) -> None:
    for p in result.ports:
        usb = f"{p.vid}:{p.pid}" if p.vid and p.pid else ""
        fields = (p.name, p.description or "", usb, p.serial_number or "")
        announce(out, "\t".join(fields).rstrip("\t"))


def _show_read(result: ReadResult, out: TextIO) -> None:
    """The reply's exact bytes, or one line per frame (its parsed fields, else its text)."""
    if result.frames is not None:
        for frame in result.frames:
            announce(out, _frame_line(frame))
        return
    raw = decode_input(result.data, result.encoding)
    if raw and not raw.endswith(b"\n") and out.isatty():
        raw += b"\n"  # on a terminal, keep the status line off the reply's last line
    out.flush()
    out.buffer.write(raw)
    out.buffer.flush()


def _frame_line(frame: Frame) -> str:
    if frame.parsed is not None:
        return json.dumps(frame.parsed, ensure_ascii=False)
    return frame.data if frame.encoding == "utf8" else f"{frame.encoding}:{frame.data}"
