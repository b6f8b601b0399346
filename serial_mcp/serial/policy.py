"""Port policy at the opener seam: the allowlist (fail closed) and friendly port resolution.

``GuardedOpener`` wraps any opener and refuses ports the allowlist does not admit, judged on facts
(see ``core.allowlist``): a device path on its real path and USB identity, a network URL on the host
and port pyserial will connect to, a ``replay://`` file on its real path. What was judged is what
the inner opener is given: the real device path (as a ``JudgedPath``, never the name again), the
rebuilt network URL, the capture file's real path. ``resolve_port`` lets an agent name a port by
serial number, ``/dev/serial/by-id`` name or a description fragment, when exactly one live port fits.

``PortPolicy`` is what every front door enforces (the server, each CLI command, ``serial_mcp.Engine``);
``policy_opener`` is the one place it becomes an opener, so no door can build a weaker one.
"""

from __future__ import annotations

import glob
import os
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from serial_mcp import messages
from serial_mcp.core.allowlist import Pattern, PortFacts, allowed, parse_allowlist, replay_globs
from serial_mcp.core.port_url import NETWORK_SCHEMES, check_text, parse_port, parse_scheme_name, scheme_of
from serial_mcp.core.settings import SerialSettings
from serial_mcp.errors import AccessError, ErrorCode, InvalidArgument, PortError
from serial_mcp.serial.firmware_elf import ElfScope
from serial_mcp.serial.handle import Opener, PortHandle
from serial_mcp.serial.judged import JudgedPath
from serial_mcp.serial.openers import default_opener
from serial_mcp.serial.ports import PortInfo, list_system_ports
from serial_mcp.serial.replay import parse_replay_url
from serial_mcp.serial.replay_files import real_path, replay_bases, replay_candidates

BY_ID = "/dev/serial/by-id"
MIN_FRAGMENT = 3  # a description fragment shorter than this matches too much to mean one port


def _real(path: str) -> str:
    return os.path.realpath(path)


def port_facts(port: str, patterns: list[Pattern], port_lister: Callable[[], list[PortInfo]]) -> PortFacts:
    """The facts a device path is judged on (a URL's are worked out by ``GuardedOpener``)."""
    if "://" in port:
        return PortFacts(port, None, scheme=scheme_of(port))
    real = _real(port)
    info = next((p for p in port_lister() if _real(p.name) == real), None)
    expanded = frozenset(_real(m) for p in patterns if p.kind == "path" for m in glob.glob(p.text))
    return PortFacts(
        port,
        real,
        info.vid if info else None,
        info.pid if info else None,
        info.serial_number if info else None,
        expanded,
    )


def _identity(real: str) -> tuple[int, int] | None:
    try:
        st = os.stat(real)
    except OSError:
        return None  # missing: the open fails with port_not_found
    return (st.st_dev, st.st_ino)


class GuardedOpener:
    """Checks every open (including reconnects) against the allowlist before the inner opener runs.
    ``capture_dir`` is where relative ``replay://`` names are looked up (as the replay opener does)."""

    def __init__(
        self,
        inner: Opener,
        patterns: list[Pattern],
        port_lister: Callable[[], list[PortInfo]],
        *,
        capture_dir: Path | None = None,
    ) -> None:
        self.inner = inner
        self.patterns = patterns
        self.port_lister = port_lister
        self.capture_dir = capture_dir

    def open(self, port: str, settings: SerialSettings) -> PortHandle:
        return self.inner.open(self.judge(port), settings)

    def judge(self, port: str) -> str:
        """What the inner opener is to open for ``port``, or ``not_allowed``."""
        check_text(port)
        scheme = scheme_of(port)
        if scheme is None:
            facts = port_facts(port, self.patterns, self.port_lister)
            real = facts.real_path or port
            self._require(facts, messages.NOT_ALLOWED.format(port=port, real=real))
            return JudgedPath(real, _identity(real))
        if scheme in NETWORK_SCHEMES:
            target = parse_port(port)  # a user@ part, a bad host or option: invalid_argument
            facts = PortFacts(port, None, scheme=scheme, host=target.host, port=target.port)
            where = f"{scheme}://{target.host}:{target.port}"
            self._require(facts, messages.NOT_ALLOWED_URL.format(port=port, target=where))
            return target.open_name
        if scheme == "replay":
            return self._judge_replay(port)
        self._require(PortFacts(port, None, scheme=scheme), messages.NOT_ALLOWED.format(port=port, real=port))
        return port

    def _require(self, facts: PortFacts, refusal: str) -> None:
        if not allowed(self.patterns, facts):
            raise AccessError(ErrorCode.NOT_ALLOWED, refusal)

    def _judge_replay(self, port: str) -> str:
        """The first candidate file the allowlist admits (on its real path), as an absolute URL;
        one refusal, whatever exists there, when none is admitted."""
        spec = parse_replay_url(port)
        bases = tuple(real_path(b) for b in replay_bases(self.capture_dir))
        admitted = [
            real
            for c in replay_candidates(spec.path, self.capture_dir)
            if allowed(self.patterns, PortFacts(port, real := real_path(c), scheme="replay", bases=bases))
        ]
        if not admitted:
            raise AccessError(ErrorCode.NOT_ALLOWED, messages.REPLAY_REFUSED.format(path=spec.path))
        pick = next((r for r in admitted if os.path.isfile(r)), admitted[0])
        query = port.partition("?")[2]
        return "replay://" + urllib.parse.quote(pick, safe="/") + ("?" + query if query else "")


@dataclass(frozen=True, slots=True)
class PortPolicy:
    """What a front door enforces on the ports it opens, from ``--read-only``, ``--allowlist``,
    ``--enable-url-scheme`` and ``--capture-dir`` (or their environment variables and config keys,
    or ``Engine``'s keywords). ``allowlist`` None: every port; otherwise only what it admits."""

    read_only: bool = False
    allowlist: tuple[str, ...] | None = None
    enable_url_schemes: frozenset[str] = frozenset()
    capture_dir: Path | None = None
    firmware_dirs: tuple[Path, ...] = ()  # issue 24: where open(elf=...) may read, besides the captures
    labgrid_coordinator: str | None = None  # labgrid:// places (issue 25); None: LG_COORDINATOR

    @classmethod
    def of(
        cls,
        *,
        read_only: bool = False,
        allowlist: Iterable[str] | None = None,
        enable_url_schemes: Iterable[str] = (),
        capture_dir: Path | str | None = None,
        firmware_dirs: Iterable[Path | str] = (),
        labgrid_coordinator: str | None = None,
    ) -> PortPolicy:
        """A policy from loosely typed values (the API's keywords): ``invalid_argument`` for a bare
        string where a list belongs (never taken character by character) or a bad scheme name."""
        if isinstance(allowlist, str):
            raise InvalidArgument(messages.POLICY_NOT_A_LIST.format(name="allowlist", value=allowlist))
        if isinstance(enable_url_schemes, str):
            raise InvalidArgument(
                messages.POLICY_NOT_A_LIST.format(name="enable_url_schemes", value=enable_url_schemes)
            )
        schemes = set()
        for name in enable_url_schemes:
            try:
                schemes.add(parse_scheme_name(name))
            except (ValueError, AttributeError) as exc:
                raise InvalidArgument(messages.POLICY_BAD_SCHEME.format(error=exc)) from None
        return cls(
            bool(read_only),
            tuple(allowlist) if allowlist is not None else None,
            frozenset(schemes),
            Path(capture_dir) if capture_dir is not None else None,
            _dirs(firmware_dirs),
            labgrid_coordinator or None,
        )

    def patterns(self) -> list[Pattern] | None:
        """The parsed allowlist (``invalid_argument`` for a bad or empty one: fail closed)."""
        return parse_allowlist(list(self.allowlist)) if self.allowlist is not None else None

    def elf_scope(self) -> ElfScope:
        """Where a firmware ELF may be read: as ``replay://`` captures, plus the firmware directories."""
        patterns = self.patterns() or []
        replay_patterns = [p.path for p in patterns if p.kind == "replay" and p.path is not None]
        capture_dir = self.capture_dir

        def globs() -> list[str]:
            bases = tuple(real_path(b) for b in replay_bases(capture_dir))
            return [g for path in replay_patterns for g in replay_globs(path, bases)]

        return ElfScope(capture_dir, self.firmware_dirs, globs)


def _dirs(dirs: Iterable[Path | str]) -> tuple[Path, ...]:
    if isinstance(dirs, str | Path):
        raise InvalidArgument(messages.POLICY_NOT_A_LIST.format(name="firmware_dirs", value=dirs))
    return tuple(Path(d) for d in dirs)


def policy_opener(
    policy: PortPolicy,
    port_lister: Callable[[], list[PortInfo]] = list_system_ports,
    inner: Opener | None = None,
) -> Opener:
    """The opener every front door opens through: ``inner`` (default: ``default_opener`` with the
    policy's URL schemes and capture directory), behind a ``GuardedOpener`` when there is an
    allowlist. Schemes configure the default opener only: with an ``inner`` of one's own they would
    be dropped in silence, so that is refused."""
    patterns = policy.patterns()
    if inner is not None and policy.enable_url_schemes:
        raise InvalidArgument(messages.POLICY_SCHEMES_NEED_DEFAULT_OPENER)
    opener = inner or default_opener(
        policy.capture_dir,
        enabled_schemes=policy.enable_url_schemes,
        allowlist=patterns,
        labgrid_coordinator=policy.labgrid_coordinator,
    )
    if patterns is not None:
        opener = GuardedOpener(opener, patterns, port_lister, capture_dir=policy.capture_dir)
    return opener


def resolve_port(port: str, port_lister: Callable[[], list[PortInfo]]) -> str:
    """The device path ``port`` stands for. Paths and URLs are returned as given; otherwise a unique
    serial number, by-id name or description fragment is looked up. Ambiguity is an error."""
    if (
        "://" in port
        or os.path.exists(port)
        or port.startswith(("/", "\\\\"))
        or port.upper().startswith("COM")
    ):
        return port
    ports = port_lister()
    for pick in (
        lambda p: p.serial_number == port,
        lambda p: any(
            os.path.basename(link) == port and _real(link) == _real(p.name)
            for link in glob.glob(f"{BY_ID}/*")
        ),
        lambda p: (
            len(port.strip()) >= MIN_FRAGMENT  # "" or "a" must never pick a port
            and port.lower() in " ".join(filter(None, (p.description, p.product, p.manufacturer))).lower()
        ),
    ):
        found = [p for p in ports if pick(p)]
        if len(found) == 1:
            return found[0].name
        if len(found) > 1:
            names = ", ".join(f"{p.name} ({p.description or p.serial_number or '-'})" for p in found)
            raise PortError(
                ErrorCode.PORT_AMBIGUOUS,
                messages.PORT_AMBIGUOUS.format(port=port, candidates=names),
                port=port,
            )
    return port
