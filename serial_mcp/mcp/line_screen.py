"""stdio: answer the lines the SDK would drop.

The SDK parses each stdin line with pydantic-core, which rejects lone surrogates and nesting past
~200 levels, and then drops the line without a reply (it cannot know the id). ``parse_line`` parses
a line once, with the same parser; a line it would drop is answered (``answer_for_rejected_line``),
with the id recovered by a shallow scan (``envelope``). So is a request whose ``id`` is not a string
or an integer (``true``, ``1.5``, ``null``, ``[]``): the SDK's parser takes it for a notification,
which is never answered; it gets ``-32600`` with id null (``bad_id_problem``, also used over HTTP).
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeGuard

import mcp_types as types

from serial_mcp import messages
from serial_mcp.errors import ErrorCode
from serial_mcp.mcp import stdio_pipes
from serial_mcp.mcp.argument_guard import MAX_DEPTH, problem_in, quoted
from serial_mcp.mcp.toolkit import error_result

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
        code, problem = types.PARSE_ERROR, messages.REQUEST_NOT_JSON.format(error=quoted(str(exc)))
    else:
        if isinstance(parsed, dict) and "id" in parsed:  # the member the SDK's parser saw (the last)
            env[("id",)] = parsed["id"]
        found = problem_in(env.get(("method",)), parsed.get("params")) if isinstance(parsed, dict) else None
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
