"""Schema slimming: the same JSON Schemas with pydantic's noise removed.

Every agent session pays for ``tools/list`` in tokens, so titles, ``default: null`` and
``anyOf [X, null]`` wrappers are folded away. Optional inputs stay optional (not in ``required``);
output schemas list the fields every result carries, and leave the nullable extras unlisted (still
allowed: output schemas never forbid additional properties).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from mcp.server.mcpserver import MCPServer

from serial_mcp.mcp import sdk_private


def slim(schema: Any, *, keep_null: bool) -> Any:
    """Return a slimmed copy of ``schema``; ``keep_null`` keeps nullability (output schemas)."""
    if isinstance(schema, list):
        return [slim(s, keep_null=keep_null) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and (value is None or value is False or value == "" or keep_null):
            continue  # false/"" are what an absent optional means anyway; outputs need no defaults
        if key == "additionalProperties" and value is True:
            continue  # the JSON Schema default
        if key == "required" and keep_null:
            continue  # results always carry every field; listing them again costs tokens, adds nothing
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: slim(v, keep_null=keep_null and name not in DECLARED)
                for name, v in value.items()
                # outputs list what is always there, and the DECLARED extras (never null: lean)
                if not (keep_null and _nullable(v)) or name in DECLARED
            }
            continue
        out[key] = slim(value, keep_null=keep_null)
    variants = out.get("anyOf")
    if isinstance(variants, list) and any(v == {"type": "null"} for v in variants):
        rest = [v for v in variants if v != {"type": "null"}]
        simple = all(set(v) == {"type"} and isinstance(v["type"], str) for v in rest)
        if simple:
            types = [v["type"] for v in rest] + (["null"] if keep_null else [])
            del out["anyOf"]
            out["type"] = types[0] if len(types) == 1 else types
        elif len(rest) == 1 and not keep_null:
            del out["anyOf"]
            out.update(rest[0])
        else:
            out["anyOf"] = rest + ([{"type": "null"}] if keep_null else [])
    return out


# issue 26: optional result fields an agent acts on, listed in the output schema even though they
# are not always there. Results are lean (a null field is never sent), so each is declared with
# its non-null type; a nested model they use is a shared ``$defs`` entry.
DECLARED = frozenset(
    {"frames", "frames_dropped", "bytes_skipped", "cursor", "match_index", "counts", "bad_frames", "parsed"}
)


def _nullable(prop: Any) -> bool:
    """An output field that may be null is one of the optional extras (``frames`` of a raw read,
    ``error``, ``responded`` …): it stays allowed (no ``additionalProperties: false``) but is not
    listed, so every agent session does not pay for it in tokens."""
    if not isinstance(prop, dict):
        return False
    kind = prop.get("type")
    if isinstance(kind, list) and "null" in kind:
        return True
    return any(v == {"type": "null"} for v in prop.get("anyOf", []))


# Result fields that repeat another tool's whole result: described by reference instead of re-listed.
SHARED_RESULTS = {("transact", "read"): "read", ("capture_boot", "read"): "read"}


def _share(schema: dict[str, Any], field: str, other_tool: str) -> dict[str, Any]:
    props = dict(schema.get("properties", {}))
    props[field] = {"type": "object", "description": f"The same shape as {other_tool}'s result."}
    out = {**schema, "properties": props}
    text = json.dumps({k: v for k, v in out.items() if k != "$defs"})
    defs = {k: v for k, v in out.get("$defs", {}).items() if f"#/$defs/{k}" in text}
    if defs:
        out["$defs"] = defs
    else:
        out.pop("$defs", None)
    return out


def inline_single_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$defs`` entry that is referenced exactly once written in place of its
    ``$ref``: shorter, and a client validating each result (the SDK's does, with ``jsonschema``)
    resolves no reference — about a fifth of that validation's time. Shared and recursive
    definitions stay in ``$defs``."""
    while True:
        defs = schema.get("$defs")
        if not isinstance(defs, dict) or not defs:
            return schema
        text = json.dumps(schema)
        once = {
            name: body
            for name, body in defs.items()
            if text.count(f'"#/$defs/{name}"') == 1 and f'"#/$defs/{name}"' not in json.dumps(body)
        }
        if not once:
            return schema
        rest = {k: v for k, v in defs.items() if k not in once}
        body = _replace_refs({k: v for k, v in schema.items() if k != "$defs"}, once)
        if rest:
            body["$defs"] = _replace_refs(rest, once)
        schema = body


def _replace_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_replace_refs(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
        siblings = {k: _replace_refs(v, defs) for k, v in node.items() if k != "$ref"}
        return {**_replace_refs(defs[ref[8:]], defs), **siblings}
    return {k: _replace_refs(v, defs) for k, v in node.items()}


def slim_tool_schemas(server: MCPServer, skip: Collection[str] = ()) -> None:
    """Slim the input and output schema of every registered tool but those in ``skip`` (slim
    already), in place."""
    for tool in sdk_private.tools_of(server):
        if tool.name in skip:
            continue
        tool.parameters = inline_single_refs(slim(tool.parameters, keep_null=False))
        output = tool.fn_metadata.output_schema
        if output is not None:
            output = slim(output, keep_null=True)
            for (name, field), other in SHARED_RESULTS.items():
                if tool.name == name:
                    output = _share(output, field, other)
            tool.fn_metadata.output_schema = inline_single_refs(output)
