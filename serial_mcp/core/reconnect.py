"""Auto-reconnect policy: validated once at open, then it only answers "how long until attempt n"."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from serial_mcp import messages
from serial_mcp.core.unknown_keys import reject_unknown_keys
from serial_mcp.errors import InvalidArgument

POLICY_KEYS = ("enabled", "max_attempts", "initial_delay_ms", "max_delay_ms", "backoff")
# A reconnected port that stays up this long is back for real: only then do the attempts and the
# backoff start over. What it received meanwhile does not count: a ser2net whose device is gone
# accepts every connection, prints "Device open failure" and closes, again and again.
STABLE_S = 2.0


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """Bounded exponential backoff. ``max_attempts`` 0 means keep trying until closed; attempts
    count on until a reconnect stays up ``STABLE_S``."""

    enabled: bool = True
    max_attempts: int = 20
    initial_delay_ms: int = 200
    max_delay_ms: int = 5000
    backoff: float = 2.0

    def delay_s(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt`` (1-based)."""
        ms = min(self.max_delay_ms, self.initial_delay_ms * self.backoff ** max(0, attempt - 1))
        return ms / 1000

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_policy(spec: Any) -> ReconnectPolicy | None:
    """``true``/``false`` or an object with the policy fields; None when disabled."""
    if spec is None or spec is False:
        return None
    if spec is True:
        return ReconnectPolicy()
    if not isinstance(spec, dict):
        raise InvalidArgument(messages.RECONNECT_BAD)
    reject_unknown_keys(spec, POLICY_KEYS, "reconnect")
    policy = ReconnectPolicy(**spec)
    ints = (policy.max_attempts, policy.initial_delay_ms, policy.max_delay_ms)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in ints) or not isinstance(
        policy.backoff, int | float
    ):
        raise InvalidArgument(messages.RECONNECT_BAD)
    if not (
        0 <= policy.max_attempts <= 10_000 and 1 <= policy.initial_delay_ms <= policy.max_delay_ms <= 600_000
    ):
        raise InvalidArgument(messages.RECONNECT_RANGE)
    if not 1.0 <= policy.backoff <= 10.0:
        raise InvalidArgument(messages.RECONNECT_RANGE)
    return policy if policy.enabled else None
