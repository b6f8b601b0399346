"""Boots, resets, crashes and boot loops found in received bytes: a sans-IO detector and its signature table.

``EventDetector().feed(data, offset, t)`` returns :class:`Event` objects; see docs/events.md.
"""

from serial_mcp.core.events.detector import MAX_FRAMES, MAX_LINE, EventDetector
from serial_mcp.core.events.model import KINDS, SEVERITIES, Event, Kind, Severity
from serial_mcp.core.events.signatures import SIGNATURES, Signature

__all__ = [
    "KINDS",
    "MAX_FRAMES",
    "MAX_LINE",
    "SEVERITIES",
    "SIGNATURES",
    "Event",
    "EventDetector",
    "Kind",
    "Severity",
    "Signature",
]
