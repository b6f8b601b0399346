"""A read's result: what the reader found (a ``ReadOutcome``) as the typed ``ReadResult`` a call
returns, with its frames, the bad frames it dropped, the standing answers inside its window, a
hint when nothing was heard and the events new to its caller (issue 24). Every field is filled;
what a front door leaves out of its answer (lean results, ``verbose``) is ``serial_mcp.answers``'.
"""

from __future__ import annotations

import bisect
from typing import Any

from serial_mcp import messages
from serial_mcp.core import ansi
from serial_mcp.core.encoding import encode_output
from serial_mcp.core.summary import bad_reason, excerpt
from serial_mcp.engine import results as models
from serial_mcp.engine.option_types import FramesView
from serial_mcp.serial import reader
from serial_mcp.serial.connection import Connection
from serial_mcp.serial.responder import Responder


def read_result(
    conn: Connection,
    o: reader.ReadOutcome,
    encoding: str,
    responder: Responder | None = None,
    strip_ansi: bool = False,
    view: FramesView | None = None,
    **told: Any,
) -> models.ReadResult:
    """Shape a read; ``view`` (frames=): ``raw`` drops parsed fields, ``parsed`` drops the raw text of
    frames that were parsed (the cheap forms), ``both`` (default) keeps both. ``told``: the fields the
    call adds (its cursor as the caller names it, a hint, events, a screen), set as it is made."""
    stripped = 0
    data = o.data
    if strip_ansi:
        data, stripped = ansi.strip_ansi(data)
    text, used = encode_output(data, encoding)
    frames: list[models.Frame] | None = None
    if o.frames is not None:
        times = o.frame_times or [None] * len(o.frames)
        frames = []
        # one encoding per read (issue 26): a read whose frames are not all text gives them all in hex,
        # not utf8 for one frame and hex for the next
        frame_encoding = encoding if encoding != "utf8" or all(_is_text(f.data) for f in o.frames) else "hex"
        for i, (f, t) in enumerate(zip(o.frames, times, strict=True)):
            fdata = f.data
            if strip_ansi:
                fdata, n = ansi.strip_ansi(fdata)
                stripped += n
            ftext, fenc = encode_output(fdata, frame_encoding)
            frames.append(
                models.Frame(
                    index=i,
                    data="" if view == "parsed" and f.parsed else ftext,
                    encoding=fenc,
                    offset=f.start,
                    t=t,
                    parsed=None if view == "raw" else f.parsed,
                    checksum_valid=f.checksum_valid,
                    bad=bad_reason(f) if f.checksum_valid is False else None,
                )
            )
    matched = o.match is not None or o.match_frame is not None
    return models.ReadResult(
        data=text,
        encoding=used,
        stop_reason=o.stop_reason,
        from_offset=o.from_offset,
        next_offset=o.next_offset,
        bytes_lost=o.bytes_lost,
        buffered_remaining=o.buffered_remaining,
        matched=matched,
        match_index=o.match_frame
        if o.match_frame is not None
        else (None if o.match is None else o.match.start),
        match_offset=None if o.match is None else o.from_offset + o.match.start,
        state=conn.state,
        frames=frames,
        frames_dropped=o.frames_dropped or 0,
        frames_skipped=o.frames_skipped,
        frames_filtered=o.frames_filtered or None,
        bytes_skipped=o.bytes_skipped or 0,
        error=o.error,
        responded=None if responder is None else responder.sent,
        ansi_stripped=stripped if strip_ansi else None,
        frames_view=view if frames is not None and view not in (None, "both") else None,
        counts=o.summary,
        bad_frames=_named_bad(o) if o.rejected else None,
        answered=_standing_answers(conn, o.from_offset - (o.bytes_skipped or 0), o.next_offset),
        **told,
    )


async def new_events(conn: Connection, key: str, offset: int, since: int = 0) -> list[dict[str, Any]] | None:
    """The events ``key`` (the caller's cursor) has not been shown yet, once the detector has scanned up
    to ``offset`` (the end of what the result returns; bounded wait), compact, each with its text line."""
    await conn.events.settle(offset)
    return conn.events.take_unseen(key, offset, since)


def silence_hint(conn: Connection, o: reader.ReadOutcome, sent: bytes | None) -> str | None:
    """A wait that ended with nothing received since the port opened says so, and what may be wrong:
    a command without a line end is often not taken yet (issue 37.8)."""
    if o.stop_reason != "timeout" or conn.rx_end() > 0:
        return None
    if sent is None:
        why = messages.S_NOTHING_READ
    else:
        why = messages.S_NOTHING_CHECK if sent[-1:] in (b"\r", b"\n") else messages.S_NOTHING_NEWLINE
    return messages.S_NOTHING_SINCE_OPEN + why


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


MAX_ANSWERS_SHOWN = 8


def _standing_answers(conn: Connection, start: int, end: int) -> list[dict[str, Any]] | None:
    """The standing rules' answers to a match inside ``[start, end)`` (issue 26: made visible)."""
    found = [
        {"on": r.on, "offset": e["match_offset"]}
        for r in list(conn.responders)
        if r.standing
        for e in list(r.events)
        if start <= e.get("match_offset", -1) < end
    ]
    return found[:MAX_ANSWERS_SHOWN] or None


def _named_bad(o: reader.ReadOutcome) -> list[models.BadFrame]:
    """The bad frames a framed read dropped (the first few): where each would have been among the
    frames, its offset, why it is bad and how it starts."""
    starts = [f.start for f in o.frames or []]
    return [
        models.BadFrame(
            index=bisect.bisect_left(starts, f.start),
            offset=f.start,
            reason=bad_reason(f),
            excerpt=excerpt(f.data),
        )
        for f in o.rejected or []
    ]
