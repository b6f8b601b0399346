"""STUB (lead's worktree only; wt-kinds delivers the real table)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

Confidence = Literal["high", "medium", "low"]
KINDS: Final = ("uboot", "micropython", "at_modem", "text_stream", "binary_stream", "silent", "unknown")


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: str
    confidence: Confidence
    evidence: str
    open: Mapping[str, object]
    prompt: str | None = None
    hold_off: str | None = None
    settled: bool = True


@dataclass(frozen=True, slots=True)
class Poke:
    name: str
    data: bytes
    wait_ms: int
    settings: Mapping[str, object] = field(default_factory=dict)


def judge_heard(heard: bytes, quiet_ms: float) -> Verdict:
    if not heard:
        return Verdict("silent", "high", "", {}, settled=False)
    if b"=> " in heard[-16:]:
        return Verdict("uboot", "high", "=> ", {}, "=> ")
    if b">>> " in heard[-16:]:
        return Verdict("micropython", "high", ">>> ", {}, ">>> ")
    if re.search(rb"Hit any key to stop autoboot", heard):
        return Verdict("uboot", "medium", "Hit any key", {}, hold_off="U-Boot countdown", settled=False)
    if quiet_ms < 300:
        return Verdict("text_stream", "medium", heard[-20:].decode("latin-1"), {}, hold_off="boot in progress", settled=False)
    return Verdict("text_stream", "medium", heard[-20:].decode("latin-1"), {}, settled=False)


def pokes_for(verdict: Verdict, heard: bytes) -> list[Poke]:
    if verdict.settled or verdict.hold_off:
        return []
    return [Poke("cr", b"\r", 300), Poke("at", b"AT\r", 300)]


def judge_reply(poke: Poke, reply: bytes, before: Verdict) -> Verdict:
    if poke.name == "at" and b"OK" in reply:
        return Verdict("at_modem", "high", "AT -> OK", {"protocol": "at_command"})
    v = judge_heard(reply, 1000.0)
    return v if v.settled else before
