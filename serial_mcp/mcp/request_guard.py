"""Every request gets an answer: malformed JSON-RPC is refused clearly instead of being dropped.

Two layers:

* ``ArgumentGuard`` (server middleware, every transport): a request whose params hold a lone
  surrogate (``"\\ud800"`` is valid JSON but not text: it cannot be encoded to bytes or echoed
  back) or are nested deeper than ``MAX_DEPTH`` is refused before any tool sees it, a
  ``tools/call`` with an ``invalid_argument`` tool error, anything else with JSON-RPC
  ``-32602``.
* ``run_stdio`` (the stdio transport): the SDK parses each stdin line with pydantic-core, which
  rejects lone surrogates and nesting past ~200 levels, and then drops the line without a reply
  (it cannot know the id). Here each line is parsed once, with the same parser, and a line it
  would drop is answered, with the id recovered by a shallow scan of the line. So is a request
  whose ``id`` is not a string or an integer (``true``, ``1.5``, ``null``, ``[]``): the SDK's
  parser takes it for a notification, which is never answered; it gets ``-32600`` with id null.

Over HTTP the SDK answers unparseable bodies itself (400 / ``-32700``), the middleware covers
what its parser lets through, and ``http.BadIdScreen`` refuses bad ids (``bad_id_problem``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeGuard

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.shared._context_streams import ContextReceiveStream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from serial_mcp import messages
from serial_mcp.errors import ErrorCode
from serial_mcp.mcp import era_loop, session_streams, stdio_pipes
from serial_mcp.mcp.in_flight import InFlight
from serial_mcp.mcp.toolkit import error_result

log = logging.getLogger(__name__)

MAX_DEPTH = 64  # containers inside params; real tool arguments are two or three deep


def _quoted(text: str) -> str:
    """``text`` safe to put in a reply: surrogates and non-ASCII as JSON escapes."""
    return json.dumps(text)[1:-1]


def _lone_surrogate(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return _quoted(text[exc.start])
    return None


def _path(parts: tuple[str | int, ...]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{_quoted(p)}" if out else _quoted(p))
    return out or "(top)"


def find_unsafe(value: Any, where: str) -> str | None:
    """Why ``value`` (parsed JSON) cannot be served, or None. ``where`` formats with ``path``.

    Iterative, so a deep value cannot exhaust the Python stack here.
    """
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (), 0)]
    while stack:
        item, parts, depth = stack.pop()
        if isinstance(item, str):
            char = _lone_surrogate(item)
            if char is not None:
                return messages.REQUEST_LONE_SURROGATE.format(
                    where=where.format(path=_path(parts)), char=char
                )
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= MAX_DEPTH:
            return messages.REQUEST_TOO_DEEP.format(where=where.format(path=_path(parts)), max=MAX_DEPTH)
        if isinstance(item, dict):
            for key, sub in item.items():
                key_char = _lone_surrogate(key) if isinstance(key, str) else None
                if key_char is not None:
                    return messages.REQUEST_LONE_SURROGATE.format(
                        where=where.format(path=_path(parts)), char=key_char
                    )
                stack.append((sub, (*parts, str(key)), depth + 1))
        else:
            stack.extend((sub, (*parts, i), depth + 1) for i, sub in enumerate(item))
    return None


def _plainly_safe(value: Any) -> bool:
    """True when every string (and key) is ASCII and nothing nests ``MAX_DEPTH`` deep: the common
    case, told without building a path per item (``find_unsafe`` explains any other case)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                return False
        elif isinstance(item, dict):
            if depth >= MAX_DEPTH - 1:
                return False
            for key, sub in item.items():
                if isinstance(key, str) and not key.isascii():
                    return False
                stack.append((sub, depth + 1))
        elif isinstance(item, list):
            if depth >= MAX_DEPTH - 1:
                return False
            stack.extend((sub, depth + 1) for sub in item)
    return True


def _problem(method: str | None, params: Any) -> str | None:
    if _plainly_safe(params):
        return None
    if method == "tools/call" and isinstance(params, dict):
        args = params.get("arguments")
        problem = find_unsafe(args, messages.REQUEST_WHERE_ARGUMENT) if args is not None else None
        rest = {k: v for k, v in params.items() if k != "arguments"}
        return problem or find_unsafe(rest, messages.REQUEST_WHERE_PARAMS)
    return find_unsafe(params, messages.REQUEST_WHERE_PARAMS)


MAX_SHOWN_PARAM_ERRORS = 3


def _params_problem(method: str, exc: ValidationError) -> str:
    """What the SDK's params check found, in words (it answers only "Invalid request parameters")."""
    shown: list[str] = []
    for error in exc.errors(include_url=False, include_input=True):
        where = _path(tuple(error["loc"]))
        if error["type"] == "missing":
            text = messages.REQUEST_MISSING_PARAM.format(where=where)
        else:
            problem = error["msg"][:1].lower() + error["msg"][1:]
            text = messages.REQUEST_BAD_PARAM.format(
                where=where, problem=problem, kind=_json_kind(error.get("input"))
            )
        if text not in shown:
            shown.append(text)
    return messages.REQUEST_BAD_PARAMS.format(method=method, errors="; ".join(shown[:MAX_SHOWN_PARAM_ERRORS]))


def _json_kind(value: Any) -> str:
    """The JSON kind of a value (never the value: it is the caller's data)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


class ArgumentGuard:
    """Server middleware: refuse params with lone surrogates or absurd nesting, with a clear error;
    and say what is wrong with params the SDK's schema check refuses."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        method = getattr(ctx, "method", None)
        params = getattr(ctx, "params", None)
        if isinstance(method, str) and method.startswith("notifications/"):
            return await call_next(ctx)
        problem = _problem(method, params) if params is not None else None
        if problem is None:
            try:
                return await call_next(ctx)
            except ValidationError as exc:
                if not exc.title.endswith(("Request", "RequestParams")):  # not the caller's params
                    raise
                problem = _params_problem(str(method), exc)
        named = isinstance(params, dict) and isinstance(params.get("name"), str)
        if method == "tools/call" and named:
            return error_result(ErrorCode.INVALID_ARGUMENT, problem)
        raise MCPError(code=types.INVALID_PARAMS, message=problem) from None


# --- stdio: answer the lines the SDK would drop ------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_WANTED = {("id",), ("method",), ("params", "name")}


class NotScalar:
    """What ``envelope`` records for a wanted member whose value is an object or an array."""

    def __init__(self, opening: str) -> None:
        self.kind = "dict" if opening == "{" else "list"


def _id_kind(value: Any) -> str:
    name = value.kind if isinstance(value, NotScalar) else type(value).__name__
    return messages.REQUEST_ID_KINDS.get(name, messages.REQUEST_ID_KIND_OTHER)


def _valid_id(value: Any) -> TypeGuard[int | str]:
    return isinstance(value, int | str) and not isinstance(value, bool)


def envelope(line: str) -> dict[tuple[str, ...], Any]:
    """``id``, ``method`` and ``params.name`` of a JSON-RPC line, found without parsing it whole
    (so a line too deep or otherwise unparseable still says which request it was)."""
    found: dict[tuple[str, ...], Any] = {}
    stack: list[list[Any]] = []  # [is_object, current key, expecting a key]
    for m in _TOKEN.finditer(line):
        t = m.group()
        top = stack[-1] if stack else None
        if t in ("{", "["):
            if top is not None and top[0] and not top[2]:  # an object or array as a member's value
                path = tuple(entry[1] for entry in stack)
                if path in _WANTED and path not in found:
                    found[path] = NotScalar(t)
            stack.append([t == "{", None, t == "{"])
        elif t in ("}", "]"):
            if not stack:
                break
            stack.pop()
        elif t == ":":
            if top is not None:
                top[2] = False
        elif t == ",":
            if top is not None and top[0]:
                top[1], top[2] = None, True
        elif top is not None:
            try:
                value = json.loads(t)
            except ValueError:
                continue
            if top[0] and top[2]:
                top[1] = value if isinstance(value, str) else None
                continue
            path = tuple(entry[1] for entry in stack)
            if path in _WANTED and path not in found:
                found[path] = value
                if len(found) == len(_WANTED):
                    break
    return found


def parse_line(line: str) -> types.JSONRPCMessage | None:
    """The message on a stdin line, parsed as the SDK's stdio transport parses it; None if it cannot be."""
    if isinstance(line, stdio_pipes.OverlongLine):  # only its head was kept: it cannot be parsed
        return None
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except (ValueError, RecursionError):  # ValidationError is a ValueError; nothing may end the reader
        return None
    if isinstance(message, types.JSONRPCNotification) and _has_id_member(line):
        return None  # ``"id": true`` (1.5, null, []): a request with a bad id, not a notification
    return message


def bad_id_problem(doc: Any) -> str | None:
    """The refusal for a request (a ``method``) whose ``id`` member is not a string or an integer;
    the SDK's parser reads such a request as a notification and never answers it."""
    if (
        isinstance(doc, dict)
        and isinstance(doc.get("method"), str)
        and "id" in doc
        and not _valid_id(doc["id"])
    ):
        return messages.REQUEST_BAD_ID.format(kind=_id_kind(doc["id"]))
    return None


def _has_id_member(line: str) -> bool:
    """Does the line's object have an ``id`` member? The SDK's parser reads a request whose id is
    not a string or an integer as a notification, which would never be answered."""
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return True  # the SDK parsed it, we cannot: let the rejected-line path say what it is
    return isinstance(parsed, dict) and "id" in parsed


def answer_for_rejected_line(line: str) -> types.JSONRPCMessage | None:
    """The reply to a stdin line the SDK cannot parse; None when no reply is due (blank line,
    notification)."""
    if not line.strip():
        return None
    if isinstance(line, stdio_pipes.OverlongLine):  # only its head was kept: it cannot be parsed
        return _reply(envelope(line), types.INVALID_PARAMS, messages.REQUEST_TOO_LONG.format(max=line.limit))
    code, problem = types.INVALID_REQUEST, messages.REQUEST_NOT_JSON_RPC
    env = envelope(line)
    try:
        parsed = json.loads(line)
    except RecursionError:
        code = types.INVALID_PARAMS
        problem = messages.REQUEST_TOO_DEEP.format(where=messages.REQUEST_WHERE_WHOLE, max=MAX_DEPTH)
    except ValueError as exc:
        code, problem = types.PARSE_ERROR, messages.REQUEST_NOT_JSON.format(error=_quoted(str(exc)))
    else:
        if isinstance(parsed, dict) and "id" in parsed:  # the member the SDK's parser saw (the last)
            env[("id",)] = parsed["id"]
        found = _problem(env.get(("method",)), parsed.get("params")) if isinstance(parsed, dict) else None
        if found is not None:
            code, problem = types.INVALID_PARAMS, found
    return _reply(env, code, problem)


def _reply(env: dict[tuple[str, ...], Any], code: int, problem: str) -> types.JSONRPCMessage | None:
    """The error for a request with this envelope: a tool error for a named ``tools/call`` with bad
    params, a JSON-RPC error otherwise, nothing for a notification."""
    rid, method, name = env.get(("id",)), env.get(("method",)), env.get(("params", "name"))
    if _valid_id(rid):
        if method == "tools/call" and isinstance(name, str) and code == types.INVALID_PARAMS:
            result = error_result(ErrorCode.INVALID_ARGUMENT, problem)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            return types.JSONRPCResponse(jsonrpc="2.0", id=rid, result=dumped)
        return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=problem))
    if ("id",) in env and code != types.PARSE_ERROR:  # an id member, but true, 1.5, null, [] …
        code, problem = types.INVALID_REQUEST, messages.REQUEST_BAD_ID.format(kind=_id_kind(rid))
    elif isinstance(method, str) and code != types.PARSE_ERROR:
        return None  # a notification (no id member): JSON-RPC never answers those
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=problem))


END_OF_INPUT_GRACE_S = 3.0  # longer than the default read/transact timeout (1 s); see below


async def _answered_or_gone(in_flight: InFlight, out: Any, session_over: anyio.Event) -> None:
    """After the end of input: until every request in flight has been answered, the client closed
    our stdout, the session stopped writing, or ``END_OF_INPUT_GRACE_S`` passed. Closing stdin is
    also how a client shuts its server down: a call that runs longer (a stuck 10-minute write) must
    not keep the process, and the port it holds, alive; the session's end answers it instead."""
    gone: Callable[[], Awaitable[None]] | None = getattr(out, "gone", None)  # the threaded path: None
    with anyio.move_on_after(END_OF_INPUT_GRACE_S):
        await _first_of(in_flight, gone, session_over)


async def _first_of(
    in_flight: InFlight, gone: Callable[[], Awaitable[None]] | None, session_over: anyio.Event
) -> None:
    async with anyio.create_task_group() as tg:

        async def end_on(event: Callable[[], Awaitable[Any]]) -> None:
            await event()
            tg.cancel_scope.cancel()

        if gone is not None:
            tg.start_soon(end_on, gone)
        tg.start_soon(end_on, session_over.wait)
        await in_flight.drained()
        tg.cancel_scope.cancel()


@asynccontextmanager
async def screened_stdio(source: AsyncIterable[str], out: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server`` streams over ``source`` (lines) and ``out`` (``write``/``flush``), with
    each line parsed once: a line the SDK's parser would drop is answered here instead (the SDK's own
    transport would parse a line we had screened a second time, on every request)."""
    read_writer: session_streams.HandOverSendStream[SessionMessage | Exception]
    read_stream: ContextReceiveStream[SessionMessage | Exception]
    write_stream: session_streams.HandOverSendStream[SessionMessage]
    write_reader: ContextReceiveStream[SessionMessage]
    read_writer, read_stream = session_streams.hand_over_streams()
    write_stream, write_reader = session_streams.hand_over_streams()
    in_flight = InFlight()  # a flood of requests waits in the pipe, not as tasks in the server
    session_over = anyio.Event()  # the writer ended: every sender of replies has closed

    async def read_lines() -> None:
        with contextlib.suppress(anyio.ClosedResourceError):
            async with read_writer:
                async for line in source:
                    message = parse_line(line)
                    if message is not None:
                        refused = await in_flight.admit(message)
                        if refused is not None:
                            await write_stream.send(SessionMessage(refused))
                        else:
                            await read_writer.send(SessionMessage(message))
                        continue
                    reply = answer_for_rejected_line(line)
                    if reply is not None:
                        await write_stream.send(SessionMessage(reply))
                # End of input. A client may close stdin after its last request and read on
                # (`printf ... | serial-mcp`): what is owed gets a few seconds to be answered
                # before the session ends (the SDK answers the rest "Connection closed").
                await _answered_or_gone(in_flight, out, session_over)

    async def write_lines() -> None:
        try:
            with contextlib.suppress(anyio.ClosedResourceError):
                async with write_reader:
                    async for session_message in write_reader:
                        text = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await out.write(text + "\n")
                        await out.flush()
                        in_flight.answered(session_message.message)
        finally:
            session_over.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_lines)
        tg.start_soon(write_lines)
        yield read_stream, write_stream


async def run_stdio(server: MCPServer) -> None:
    """``MCPServer.run_stdio_async`` with screened stdin (fd 0 claimed as the SDK does)."""
    from mcp.server import stdio as sdk_stdio  # the SDK's private helpers (mcp is pinned)

    buffer, restore = sdk_stdio._claim_fd(0, sys.stdin, "rb", sdk_stdio._open_stdin_diversion)
    out_buffer, restore_out = sdk_stdio._claim_fd(1, sys.stdout, "wb", sdk_stdio._open_stdout_diversion)
    try:
        async with stdio_pipes.loop_stdio(buffer, out_buffer) as pipes:
            source: Any
            out: Any
            if pipes is not None:  # pipes: served on the loop, no worker thread per message
                source, out = pipes
            else:
                source = anyio.wrap_file(
                    sdk_stdio._UnownedTextWrapper(buffer, encoding="utf-8", errors="replace")
                )
                out = anyio.wrap_file(sdk_stdio._UnownedTextWrapper(out_buffer, encoding="utf-8"))
            try:
                async with screened_stdio(source, out) as (read_stream, write_stream):
                    low = server._lowlevel_server  # Server.run, without its per-message relay
                    await era_loop.serve(low, read_stream, write_stream, low.create_initialization_options())
            except* (BrokenPipeError, ConnectionResetError):  # the client went away: nothing to answer
                log.info(messages.STDIO_CLIENT_GONE)
    finally:
        if restore_out is not None:
            restore_out()
        if restore is not None:
            restore()


def install(server: MCPServer) -> None:
    """Guard ``server``: the argument middleware outermost, and screened stdio."""
    server.middleware.insert(0, ArgumentGuard())
    server.run_stdio_async = partial(run_stdio, server)  # type: ignore[method-assign]
