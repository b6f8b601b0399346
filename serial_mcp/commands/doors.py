"""The engine of a front-door command, under the settings the server runs under.

Every command that opens a port builds its engine here, from the ``PortPolicy`` that ``cli.py``
resolved from the flags, the environment and the config file (``config.port_policy``): the same
read-only switch and the same guarded opener as the server (``serial.policy.policy_opener``).
"""

from __future__ import annotations

from pathlib import Path

from serial_mcp.api import Engine, PortPolicy, Quotas


def engine(
    policy: PortPolicy, *, capture_dir: Path | None = None, capture_quotas: Quotas | None = None
) -> Engine:
    """An engine that enforces ``policy``; ``capture_dir`` (a command's own, e.g. ``record -o``'s
    directory) replaces the configured one."""
    return Engine(
        read_only=policy.read_only,
        allowlist=policy.allowlist,
        enable_url_schemes=sorted(policy.enable_url_schemes),
        capture_dir=capture_dir if capture_dir is not None else policy.capture_dir,
        capture_quotas=capture_quotas,
        labgrid_coordinator=policy.labgrid_coordinator,  # labgrid://PLACE (issue 25)
    )
