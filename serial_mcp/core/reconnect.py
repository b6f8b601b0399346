"""Auto-reconnect policy: validated once at open, then it only answers "how long until attempt n"."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any

from pydantic import Field, Strict, TypeAdapter
from typing_extensions import TypedDict  # pydantic validates it on Python 3.11 too

from serial_mcp import messages
from serial_mcp.core.unknown_keys import keyed
from serial_mcp.errors import InvalidArgument

Ms = Annotated[int, Strict(), Field(ge=1, le=600_000)]


class ReconnectSpec(TypedDict, total=False):
    """``reconnect`` as an object: the ``ReconnectPolicy`` fields to change."""

    enabled: Annotated[bool, Strict()]
    max_attempts: Annotated[int, Strict(), Field(ge=0, le=10_000)]
    initial_delay_ms: Ms
    max_delay_ms: Ms
    backoff: Annotated[float, Strict(), Field(ge=1.0, le=10.0)]


ReconnectArg = Annotated[
    Annotated[bool, Strict()] | ReconnectSpec | None,
    keyed(
        ReconnectSpec,
        "reconnect",
        messages.RECONNECT_BAD,
        wrong=messages.RECONNECT_RANGE,
        typed=messages.RECONNECT_BAD,
        wire=bool | dict[str, object] | None,
    ),
]
_CHECK: TypeAdapter[bool | ReconnectSpec | None] | None = None
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


def parse_policy(spec: object) -> ReconnectPolicy | None:
    """``true``/``false`` or an object with the policy fields (checked as ``ReconnectSpec``); None
    when disabled."""
    global _CHECK
    if spec is None or spec is False:
        return None
    _CHECK = _CHECK or TypeAdapter(ReconnectArg)  # built on first use
    given = _CHECK.validate_python(spec)
    policy = ReconnectPolicy(**given) if isinstance(given, dict) else ReconnectPolicy()
    if policy.initial_delay_ms > policy.max_delay_ms:
        raise InvalidArgument(messages.RECONNECT_RANGE)
    return policy if policy.enabled and given is not False else None
