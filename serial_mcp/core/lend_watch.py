"""When a lent device node is free again (pure, sans-IO: the caller scans, this decides).

``release`` lends the node to another program (arduino-cli, avrdude, dfu-util, stm32flash). The
watch compares who holds the node now with who held it at release (``baseline``: a getty, a
monitor that was there before us, is not the borrower). Once a borrower was seen and none is left,
a short ``grace`` runs: flashers close and reopen the port (avrdude after the 1200-baud touch,
esptool between stages), and a reopen within the grace keeps the lend going.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Verdict = Literal["lent", "free"]

GRACE_S = 0.5  # a borrower gone this long has let the port go (not just reopening it)
SCAN_INTERVAL_S = 0.2  # how often the holders are looked at (a scan of /proc costs a few ms)


@dataclass
class LendWatch:
    """Feed it what is seen (``opened`` from open events, ``observe`` from each scan of the
    holders); it says when the node is free again."""

    baseline: frozenset[int]
    grace_s: float = GRACE_S
    borrowers_seen: set[int] = field(default_factory=set)
    opens: int = 0  # opens of the node seen since the release (by anyone: we hold none)
    inside: int = 0  # of those, still open (each open file is closed once, however often dup'ed)
    _empty_since: float | None = None

    def opened(self) -> None:
        """Something opened the node: it is taken (again), whatever the last scan said."""
        self.opens += 1
        self.inside += 1
        self._empty_since = None

    def closed(self) -> None:
        """One of those opens was closed (its last descriptor, or its process ended)."""
        self.inside = max(0, self.inside - 1)

    def lost_count(self) -> None:
        """Open/close events were dropped: from now on only the scans say who holds the node."""
        self.inside = 0

    def observe(self, holders: frozenset[int], now: float) -> Verdict:
        """``holders``: the processes holding the node at monotonic time ``now`` (a process of
        another user cannot be seen: an open still counted in ``inside`` holds the node too)."""
        borrowers = holders - self.baseline
        self.borrowers_seen |= borrowers
        if borrowers or self.inside:
            self._empty_since = None
            return "lent"
        if not self.borrowers_seen and not self.opens:
            return "lent"  # nobody took it yet: only reclaim or the timeout end the lend
        if self._empty_since is None:
            self._empty_since = now
        return "free" if now - self._empty_since >= self.grace_s else "lent"

    def free_at(self) -> float | None:
        """When the grace of a node seen empty ends (monotonic), or None while it is held."""
        return None if self._empty_since is None else self._empty_since + self.grace_s


DEFAULT_LEND_MS = 120_000  # a flash takes seconds to a minute; the port comes back by itself sooner
MAX_LEND_MS = 3_600_000
