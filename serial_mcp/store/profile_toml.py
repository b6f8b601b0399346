"""The profiles file as TOML text: the canonical rendering of a document, and the in-place edit
of a hand-edited file with ``tomlkit`` that keeps its comments, formatting and key order.

``document_text`` picks between them: a file that is exactly what ``render_body`` makes of its
data (no hand edits beyond a leading comment block) is re-rendered (fast); any other file is
edited in place, and the edit must read back as the new data or nothing is written.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from datetime import date, datetime
from datetime import time as dtime
from typing import Any, Final

import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Comment, InlineTable, Null, Table, Whitespace

from serial_mcp import messages
from serial_mcp.core.profile_model import ProfileStoreError, iso_text, same, toml_key, toml_string
from serial_mcp.errors import ErrorCode, SerialMcpError, StorageError

_TABLE_DEPTH: Final = 3  # profiles.<name>.<section> render as [tables]; anything deeper is inline


def document_text(raw: bytes | None, old: dict[str, Any], new: dict[str, Any], path: object) -> str:
    """The new file text for data ``new``, given the file's bytes ``raw`` (None: no file yet)
    whose data is ``old``; ``path`` names the file in errors."""
    if raw is None:
        return messages.PROFILE_FILE_HEADER + render_body(new)
    text = raw.decode("utf-8-sig")  # a BOM from an editor is dropped
    header, body = split_header(text)
    if body == render_body(old):
        return header + render_body(new)
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ProfileStoreError(messages.PROFILE_STORE_CORRUPT.format(path=path, error=exc)) from exc
    sync(doc, old, new, 1)
    out = doc.as_string()
    try:
        written = tomllib.loads(out)
    except tomllib.TOMLDecodeError as exc:
        raise verify_failed(path, exc) from exc
    if not same(written, new):
        raise verify_failed(path, "the edited document reads back differently")
    return out


def verify_failed(path: object, error: object) -> SerialMcpError:
    """A bug of ours would have changed the file unfaithfully: refuse to write it."""
    return StorageError(
        ErrorCode.PROFILE_STORE_IO, messages.PROFILE_STORE_VERIFY_FAILED.format(path=path, error=error)
    )


# --- canonical rendering --------------------------------------------------------------------------------


def _value(value: Any) -> str:
    """One TOML value, inline (tables as ``{k = v}``, arrays on one line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, datetime | date | dtime):
        return iso_text(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__} as TOML")


def _is_table(value: Any, depth: int) -> bool:
    return isinstance(value, dict) and depth <= _TABLE_DEPTH


def _is_aot(value: Any, depth: int) -> bool:
    return (
        depth == _TABLE_DEPTH
        and isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) for v in value)
    )


def _render_table(path: tuple[str, ...], table: dict[str, Any], out: list[str]) -> None:
    depth = len(path) + 1  # depth of the table's children
    scalars = [(k, v) for k, v in table.items() if not _is_table(v, depth) and not _is_aot(v, depth)]
    if path and (scalars or not table):
        out.append(f"\n[{'.'.join(toml_key(p) for p in path)}]\n")
    out.extend(f"{toml_key(k)} = {_value(v)}\n" for k, v in scalars)
    for key, value in table.items():
        if _is_table(value, depth):
            _render_table((*path, key), value, out)
        elif _is_aot(value, depth):
            header = ".".join(toml_key(p) for p in (*path, key))
            for entry in value:
                out.append(f"\n[[{header}]]\n")
                out.extend(f"{toml_key(k)} = {_value(v)}\n" for k, v in entry.items())


def render_body(data: dict[str, Any]) -> str:
    """The canonical text of a document (without the leading comment block)."""
    out: list[str] = []
    _render_table((), data, out)
    return "".join(out)


def split_header(text: str) -> tuple[str, str]:
    """(leading comment/blank lines, the rest): the header survives the fast path verbatim."""
    pos = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        pos += len(line)
    return text[:pos], text[pos:]


# --- in-place edit of a hand-edited file (tomlkit keeps comments, formatting and order) ------------------


def _tk_inline(value: Any) -> Any:
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        for k, v in value.items():
            table[k] = _tk_inline(v)
        return table
    if isinstance(value, list):
        array = tomlkit.array()
        for v in value:
            array.append(_tk_inline(v))
        return array
    return tomlkit.item(value)


def _tk_item(value: Any, depth: int) -> Any:
    """A new tomlkit item laid out like the canonical renderer (tables to depth 3, inline below)."""
    if _is_table(value, depth):
        has_scalars = any(not _is_table(v, depth + 1) and not _is_aot(v, depth + 1) for v in value.values())
        table = tomlkit.table(is_super_table=bool(value) and not has_scalars)
        for k, v in value.items():
            table.append(k, _tk_item(v, depth + 1))
        return table
    if _is_aot(value, depth):
        aot = tomlkit.aot()
        for entry in value:
            aot.append(_tk_aot_entry(entry))
        return aot
    return _tk_inline(value)


def _tk_aot_entry(entry: dict[str, Any]) -> Table:
    table = tomlkit.table()
    for k, v in entry.items():
        table.append(k, _tk_inline(v))
    return table


def sync(container: Any, old: Mapping[str, Any], new: Mapping[str, Any], depth: int) -> None:
    """Edit ``container`` (whose data is ``old``) in place until its data is ``new``; unchanged
    items are not touched, so their comments and formatting survive."""
    inline = isinstance(container, InlineTable)  # a hand-written {...} can only hold inline values
    for key in [k for k in old if k not in new]:
        _tk_delete(container, key)
    for key, value in new.items():
        if key not in old:
            _tk_insert(container, key, _tk_inline(value) if inline else _tk_item(value, depth))
            continue
        before = old[key]
        if same(before, value):
            continue
        item = container[key]
        if isinstance(before, dict) and isinstance(value, dict) and isinstance(item, Mapping):
            sync(item, before, value, depth + 1)
        elif isinstance(item, AoT) and _is_aot(value, depth) and isinstance(before, list):
            _sync_aot(item, before, value)
        else:
            container[key] = _tk_inline(value) if inline else _tk_item(value, depth)


def _sync_aot(aot: AoT, old: list[Any], new: list[Any]) -> None:
    """History moves like a queue (append at the end, trim at the front): keep the entries that
    survive untouched, rebuild only when the change is anything else."""
    for drop in range(len(old) + 1):
        kept = old[drop:]
        if len(kept) <= len(new) and all(same(a, b) for a, b in zip(kept, new, strict=False)):
            for _ in range(drop):
                del aot[0]
            for entry in new[len(kept) :]:
                _aot_append(aot, entry)
            return
    raise AssertionError("unreachable: dropping every old entry always matches")


# tomlkit files the comments above a [header] under the table before it. These helpers keep such
# a block (from the last blank line on) in front of the header it precedes when we add or delete
# tables, instead of letting it drift onto the new neighbour.


def _body(item: Any) -> list[tuple[Any, Any]]:
    body: list[tuple[Any, Any]] = item.body if isinstance(item, Container) else item.value.body
    return body


def _leaf(item: Any) -> Table | None:
    """The table rendered last inside ``item`` (where the next header's comments live)."""
    if isinstance(item, AoT):
        return _leaf(item.body[-1]) if item.body else None
    if isinstance(item, Table | Container):
        keyed = [v for k, v in _body(item) if k is not None]
        if keyed and isinstance(keyed[-1], Table | AoT):
            found = _leaf(keyed[-1])
            if found is not None:
                return found
        return item if isinstance(item, Table) else None
    return None


def _last_blank(body: list[tuple[Any, Any]]) -> tuple[int, int | None]:
    """Where the comment/blank-line run ending ``body`` starts, and its last blank line (if any)."""
    start = len(body)
    while start and body[start - 1][0] is None and isinstance(body[start - 1][1], Whitespace | Comment):
        start -= 1
    blanks = [i for i in range(start, len(body)) if isinstance(body[i][1], Whitespace)]
    return start, (blanks[-1] if blanks else None)


def _take_leading_block(table: Table | None) -> list[Any]:
    """Remove and return the comments that precede the next header: the run ending ``table``
    from its last blank line on (the whole run if it has none); comments right under the
    table's last key stay with it."""
    if table is None:
        return []
    body = table.value.body
    start, blank = _last_blank(body)
    cut = start if blank is None else blank
    taken = [item for _, item in body[cut:]]
    del body[cut:]
    return taken


def _give_block(target: Any, block: list[Any]) -> None:
    body = _body(target)
    if block and isinstance(block[0], Whitespace) and body and isinstance(body[-1][1], Whitespace):
        block = block[1:]  # one blank line between sections is enough
    for item in block:
        body.append((None, item))


def _drop_attached_comments(table: Table | None) -> None:
    """Delete the comments directly above the header that follows ``table`` (after its last blank
    line): they described a table being deleted. Without a blank line nothing is removed, since
    those comments may as well describe ``table``'s last key."""
    if table is None:
        return
    body = table.value.body
    _, blank = _last_blank(body)
    if blank is not None:
        del body[blank + 1 :]


def _tk_insert(container: Any, key: str, item: Any) -> None:
    """Add a key; the comments above the next header move down to stay above it."""
    before = _leaf(container)
    if isinstance(item, Table | AoT) or before is container:
        block = _take_leading_block(before)
        container[key] = item
        _give_block(_leaf(container[key]) or container, block)
    else:
        container[key] = item


def _tk_delete(container: Any, key: str) -> None:
    """Delete a key; for a table, its comments go with it, while the comments above the next
    header (at the end of its last table) stay where the deleted table was."""
    item = container[key]
    if not isinstance(item, Table | AoT):
        del container[key]
        return
    block = _take_leading_block(_leaf(item))
    body = _body(container)
    slot, previous = -1, None
    for i, (k, v) in enumerate(body):
        if k is not None and k.key == key:
            slot = i
            break
        if k is not None and isinstance(v, Table | AoT):
            previous = v
    del container[key]
    before = _leaf(previous) if previous is not None else None
    _drop_attached_comments(before)
    if before is not None and block and isinstance(block[0], Whitespace):
        tail = _body(before)
        if tail and isinstance(tail[-1][1], Whitespace):
            block = block[1:]
    # tomlkit leaves a Null placeholder where the table was: put the block there, as one item.
    if block and 0 <= slot < len(body) and body[slot][0] is None and isinstance(body[slot][1], Null):
        body[slot] = (None, Whitespace("".join(b.as_string() for b in block)))
    elif before is not None:
        _give_block(before, block)


def _aot_append(aot: AoT, entry: dict[str, Any]) -> None:
    """Append a history entry after a blank line; the next header's comments move below it."""
    last = aot.body[-1] if aot.body else None
    block = _take_leading_block(last)
    if last is not None and not last.as_string().endswith("\n\n"):
        last.add(tomlkit.nl())
    table = _tk_aot_entry(entry)
    aot.append(table)
    _give_block(table, block)
