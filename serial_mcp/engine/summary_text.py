"""The one-line text of a summary read (``read(summary=true)``): totals (every frame, then how many
valid and bad), bytes skipped and a frame pending at the window's end, then per message type its
count, last values and the numeric fields that varied."""

from __future__ import annotations

import json
from typing import Any

from serial_mcp import messages

_LITERAL = json.JSONEncoder(ensure_ascii=False)


def _q(text: str) -> str:
    return _LITERAL.encode(text)


def _ranges_text(ranges: dict[str, dict[str, float]]) -> str:
    """The numeric fields that varied, as ``[sv 13..18, alt 41.2..43.1]``."""
    moved = [f"{name} {r['min']}..{r['max']}" for name, r in ranges.items() if r["min"] != r["max"]]
    return f" [{', '.join(moved)}]" if moved else ""


def _last_text(last: Any) -> str:
    """A type's last frame in a summary's text: its values, or the start of a text frame."""
    if isinstance(last, dict):
        return " last " + " ".join(f"{k}={v}" for k, v in last.items())
    return f" last {_q(last)}" if isinstance(last, str) else ""


def _pending_text(pending: dict[str, Any] | None) -> str:
    if not pending:
        return ""
    if pending.get("damaged"):
        return messages.S_SUMMARY_PENDING_DAMAGED.format(offset=pending["offset"])
    return messages.S_SUMMARY_PENDING.format(n=pending["bytes"], offset=pending["offset"])


def _type_text(key: str, t: dict[str, Any]) -> str:
    bad = messages.S_SUMMARY_TYPE_BAD.format(valid=t.get("valid", 0), bad=t["bad"]) if t.get("bad") else ""
    return f"{key} {t['n']}{bad}{_last_text(t.get('last'))}{_ranges_text(t.get('ranges', {}))}"


def summary_line(s: dict[str, Any], start: int, end: int, stop: str, lost: str) -> str:
    """A summary read's text: totals, then each message type's count and last values."""
    bad = s.get("bad", 0)
    reasons = ", ".join(f"{k} {v}" for k, v in s.get("bad_reasons", {}).items())
    rate = messages.S_SUMMARY_RATE.format(s=s["seconds"], rate=s["rate_per_s"]) if "rate_per_s" in s else ""
    skipped = s.get("bytes_skipped")
    why = s.get("skipped_reason", "")
    text = messages.S_SUMMARY.format(
        start=start,
        end=end,
        stop=stop,
        lost=lost,
        frames=s.get("frames", 0),
        bad=messages.S_SUMMARY_BAD.format(valid=s.get("valid", 0), n=bad, reasons=reasons) if bad else "",
        rate=rate,
        skipped=messages.S_SUMMARY_SKIPPED.format(n=skipped, why=why) if skipped else "",
        pending=_pending_text(s.get("pending")),
        types="; ".join(_type_text(key, t) for key, t in s.get("types", {}).items()) or "-",
    )
    named = s.get("bad_frames")
    if named:
        items = ", ".join(
            f"{b.get('type', '')}@{b['offset']} {b['reason']} {_q(b.get('excerpt') or b.get('error', ''))}"
            for b in named
        )
        text += messages.S_SUMMARY_BAD_FRAMES.format(items=items + (" …" if bad > len(named) else ""))
    return text
