"""Malformed tool arguments refused clearly, on every transport (server middleware).

A request whose params hold a lone surrogate (``"\\ud800"`` is valid JSON but not text: it cannot
be encoded to bytes or echoed back) or are nested deeper than ``MAX_DEPTH`` is refused before any
tool sees it: a ``tools/call`` with an ``invalid_argument`` tool error, anything else with JSON-RPC
``-32602``. Params the SDK's schema check refuses are explained in words.

The stdio lines the SDK's parser would drop are answered by ``line_screen``; over HTTP the SDK
answers unparseable bodies itself (400 / ``-32700``) and ``http.BadIdScreen`` refuses bad ids.
"""


from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from serial_mcp import messages
from serial_mcp.errors import ErrorCode
from serial_mcp.mcp.toolkit import error_result

MAX_DEPTH = 64  # containers inside params; real tool arguments are two or three deep


def quoted(text: str) -> str:
    """``text`` safe to put in a reply: surrogates and non-ASCII as JSON escapes."""
    return json.dumps(text)[1:-1]


def _lone_surrogate(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return quoted(text[exc.start])
    return None


def _path(parts: tuple[str | int, ...]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{quoted(p)}" if out else quoted(p))
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


def problem_in(method: str | None, params: Any) -> str | None:
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
        problem = problem_in(method, params) if params is not None else None
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




def install(server: MCPServer) -> None:
    """The argument guard outermost in ``server``'s middleware."""
    server.middleware.insert(0, ArgumentGuard())
