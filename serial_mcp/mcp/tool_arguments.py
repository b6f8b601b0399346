"""A tool's per-call argument work, precomputed once at registration instead of on every call.

The SDK's ``FuncMetadata`` does per call: build a name → field map of every parameter (``transact``
has 22), try ``json.loads`` on every string argument whose parameter is not plain ``str`` (``match: "OK"``
raises and catches a decode error on every plain ``transact``), validate, then copy every field
back out one by one. ``LeanArguments`` gives the same answers for every input with the maps
built once, and only tries to parse a string that could become what the SDK keeps (a list, an
object or ``null``: it leaves strings, numbers and booleans as given). It also carries no
``output_model``: results are models validated as they are built, and the SDK would otherwise
validate their dump a second time on every call (the output schema stays published).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from mcp.server.mcpserver.tools.base import Tool

from serial_mcp.mcp import sdk_private

# The first character (after JSON's whitespace) of a JSON text the SDK's pre-parse would keep: an
# array, an object or null. Anything else parses to a str/int/float/bool, which it leaves as given.
_KEPT_OPENERS = frozenset("[{n")
_JSON_SPACE = " \t\n\r"


class _Plan(NamedTuple):
    parse_keys: frozenset[str]  # parameters (and aliases) not typed plain ``str``: may hold JSON
    out_names: tuple[tuple[str, str], ...]  # (field name, name the tool receives it under)


# Built once per argument model and kept on that class (it lives exactly as long as the tool). Not
# a private attribute of the metadata: pydantic serves those through ``__getattr__``, which costs
# more than the work the plan saves.
_PLAN = "serial_mcp_argument_plan"


def _plan_for(arg_model: type[Any]) -> _Plan:
    parse: set[str] = set()
    out: list[tuple[str, str]] = []
    for name, info in arg_model.model_fields.items():
        out.append((name, info.alias or name))
        if info.annotation is not str:  # the SDK's own test for "may be JSON inside a string"
            parse.add(name)
            if info.alias:
                parse.add(info.alias)
    return _Plan(frozenset(parse), tuple(out))


class LeanArguments(sdk_private.FuncMetadata):
    """``FuncMetadata`` with its field maps built once (same validation, same kwargs)."""

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        setattr(self.arg_model, _PLAN, _plan_for(self.arg_model))

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed: dict[str, Any] | None = None
        keys: frozenset[str] = getattr(self.arg_model, _PLAN).parse_keys
        for key, value in data.items():
            if key in keys and isinstance(value, str) and value.lstrip(_JSON_SPACE)[:1] in _KEPT_OPENERS:
                try:
                    decoded = json.loads(value)
                except (ValueError, RecursionError):
                    continue
                if isinstance(decoded, str | int | float):
                    continue
                if parsed is None:
                    parsed = dict(data)
                parsed[key] = decoded
        return data if parsed is None else parsed

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        fields = self.arg_model.model_validate(self.pre_parse_json(arguments_to_validate)).__dict__
        plan: _Plan = getattr(self.arg_model, _PLAN)
        return {out: fields[name] for name, out in plan.out_names}


def make_lean(tool: Tool) -> None:
    """Give ``tool`` a ``LeanArguments`` in place of the SDK's metadata (same model and schemas)."""
    meta = tool.fn_metadata
    tool.fn_metadata = LeanArguments(
        arg_model=meta.arg_model,
        output_schema=meta.output_schema,
        output_model=None,
        wrap_output=meta.wrap_output,
    )
