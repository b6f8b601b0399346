"""Port identity and what a bare ``open(port)`` does with device profiles (pure, sans-IO).

A port's identity comes from what ``list_ports`` reports. Only a USB device with VID, PID and a
serial number can be recognised again after a replug ("high" confidence), so only such a device,
and only when no other connected port shares its fingerprint, gets a profile automatically.
Everything weaker gives a transient session: nothing is read from or written to the store.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeVar

from serial_mcp import messages
from serial_mcp.core.port_info import DEVICE_FIELDS, USB_FIELDS, PortInfo
from serial_mcp.core.unknown_keys import did_you_mean
from serial_mcp.errors import InvalidArgument

Confidence = Literal["high", "medium", "low", "none"]
PlanAction = Literal["reuse", "generate", "transient"]
ProfileMode = Literal["auto", "none"]

SELECTOR_FIELDS = (*USB_FIELDS, "port_glob", "description_glob")
PROFILE_MODES: tuple[ProfileMode, ...] = ("auto", "none")
AUTO_PREFIX = "auto-"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_NAME = 64

_USB_ID = re.compile(r"(?:0[xX])?([0-9A-Fa-f]{1,4})")
# Pseudo-terminals (Linux, macOS, BSD) and URL ports: the path says nothing about the device.
_VIRTUAL = re.compile(r"/dev/(?:pts/\d+|ptmx|ttys\d+|pty[p-za-e][0-9a-f]|tty[p-za-e][0-9a-f])")
_LABEL_JUNK = re.compile(r"[^A-Za-z0-9._-]+")
_EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Identity(PortInfo):
    """A port's device fields, cleaned, and how far they identify the device."""

    confidence: Confidence

    @property
    def port(self) -> str:
        return self.name

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields plus the fingerprint."""
        out: dict[str, Any] = {"port": self.name, "confidence": self.confidence}
        out.update({key: getattr(self, key) for key in DEVICE_FIELDS})
        out["fingerprint"] = fingerprint(self)
        return out


class ProfileView(Protocol):
    """The parts of a stored profile that planning reads (``store.profiles.Profile`` has them)."""

    @property
    def name(self) -> str: ...

    @property
    def selector(self) -> Mapping[str, str]: ...

    @property
    def revision(self) -> int: ...

    @property
    def last_used(self) -> datetime | None: ...

    @property
    def updated(self) -> datetime | None: ...


P = TypeVar("P", bound=ProfileView)


@dataclass(frozen=True, slots=True)
class OpenPlan:
    """What a bare ``open(port)`` will do about profiles, and why (``reason`` is for the agent).

    ``reuse``: bind ``profile`` (the most recently used match). ``generate``: create ``profile``
    with ``selector`` from the open's effective settings. ``transient``: read and write nothing.
    ``candidates`` lists every stored profile whose selector matches the port, most recent first.
    """

    action: PlanAction
    reason: str
    identity: Identity
    profile: str | None = None
    selector: dict[str, str] | None = None
    candidates: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the shape ``list_ports.profile_matches`` can return)."""
        return {
            "port": self.identity.port,
            "action": self.action,
            "profile": self.profile,
            "reason": self.reason,
            "confidence": self.identity.confidence,
            "fingerprint": fingerprint(self.identity),
            "selector": None if self.selector is None else dict(self.selector),
            "candidates": list(self.candidates),
        }


def _clean(value: str | None) -> str | None:
    """None for missing, blank or pyserial's ``n/a`` placeholders; stripped text otherwise."""
    if value is None:
        return None
    text = value.strip()
    return None if not text or text.lower() == "n/a" else text


def is_virtual_port(name: str) -> bool:
    """True for URL ports (``socket://``, ``loop://``, ``sim://``) and pseudo-terminals."""
    return "://" in name or _VIRTUAL.fullmatch(name) is not None


def identity_of(port: PortInfo) -> Identity:
    """Classify a port: high (USB VID+PID+serial), medium (USB without a serial), low (a
    description only), none (nothing but a path: PTYs, URLs, bare native ports)."""
    fields = {key: _clean(getattr(port, key)) for key in DEVICE_FIELDS}
    vid, pid, serial = fields["vid"], fields["pid"], fields["serial_number"]
    confidence: Confidence
    if vid and pid and serial:
        confidence = "high"
    elif (vid and pid) or (port.transport == "usb" and (serial or fields["interface"] or fields["location"])):
        confidence = "medium"
    elif is_virtual_port(port.name):
        confidence = "none"
    elif fields["description"] or fields["product"] or fields["manufacturer"]:
        confidence = "low"
    else:
        confidence = "none"
    fields["vid"], fields["pid"] = (vid.lower() if vid else None), (pid.lower() if pid else None)
    return Identity(name=port.name, hwid=port.hwid, transport=port.transport, confidence=confidence, **fields)


def fingerprint(identity: Identity) -> str | None:
    """A stable key for "the same device": ``usb:<vid>:<pid>:<serial>[/<interface>]`` for high
    confidence, ``usb:<vid>:<pid>[/<interface>]`` for medium (a model, not a unit),
    ``desc:<description>`` for low, None for none. It holds exactly what a generated selector
    can match, so two ports with one fingerprint cannot be told apart by a profile."""
    iface = f"/{identity.interface}" if identity.interface else ""
    if identity.confidence == "high":
        return f"usb:{identity.vid}:{identity.pid}:{identity.serial_number}{iface}"
    if identity.confidence == "medium":
        if identity.vid and identity.pid:
            return f"usb:{identity.vid}:{identity.pid}{iface}"
        return f"usb:?{iface}" if iface else "usb:?"
    if identity.confidence == "low":
        return f"desc:{identity.description or identity.product or identity.manufacturer}"
    return None


def normalize_usb_id(key: str, value: object) -> str:
    """``"0403"``, ``"0x403"``, ``"403"`` in any case, or an int 0..0xFFFF -> ``"0403"``."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0xFFFF:
        return f"{value:04x}"
    match = _USB_ID.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise InvalidArgument(messages.PROFILE_SELECTOR_BAD_ID.format(key=key, value=value))
    return f"{int(match.group(1), 16):04x}"


def validate_selector(raw: object, field_name: str = "selector") -> dict[str, str]:
    """A checked selector in canonical field order: known keys only, USB ids as 4 lowercase hex
    digits, every other value a non-empty string, at least one field. None values are dropped."""
    if not isinstance(raw, Mapping):
        raise InvalidArgument(messages.PROFILE_NOT_OBJECT.format(field=field_name, value=raw))
    for key in raw:
        if key not in SELECTOR_FIELDS:
            raise InvalidArgument(
                messages.PROFILE_UNKNOWN_KEY.format(
                    field=field_name,
                    key=key,
                    hint=did_you_mean(key, SELECTOR_FIELDS),
                    allowed=", ".join(SELECTOR_FIELDS),
                )
            )
    out: dict[str, str] = {}
    for key in SELECTOR_FIELDS:
        value = raw.get(key)
        if value is None:
            continue
        if key in ("vid", "pid"):
            out[key] = normalize_usb_id(f"{field_name}.{key}", value)
        elif isinstance(value, str) and value.strip():
            out[key] = value
        else:
            raise InvalidArgument(
                messages.PROFILE_SELECTOR_BAD_TEXT.format(key=f"{field_name}.{key}", value=value)
            )
    if not out:
        raise InvalidArgument(
            messages.PROFILE_SELECTOR_EMPTY.format(field=field_name, allowed=", ".join(SELECTOR_FIELDS))
        )
    return out


def selector_matches(selector: Mapping[str, str], port: PortInfo) -> bool:
    """True when every field the selector gives matches the port (an empty selector matches
    nothing). USB ids compare case-insensitively, ``port_glob`` uses the OS's filename rules,
    ``description_glob`` ignores case, the other fields compare exactly."""
    if not selector:
        return False
    ident = identity_of(port)
    for key, want in selector.items():
        if key in ("vid", "pid"):
            have = getattr(ident, key)
            if have is None or have != want.lower():
                return False
        elif key in ("serial_number", "manufacturer", "product", "interface"):
            if getattr(ident, key) != want.strip():
                return False
        elif key == "port_glob":
            if not fnmatch.fnmatch(port.name, want):
                return False
        elif key == "description_glob":
            desc = ident.description
            if desc is None or not fnmatch.fnmatchcase(desc.casefold(), want.casefold()):
                return False
        else:  # a field this version does not know can never be confirmed
            return False
    return True


def generated_selector(identity: Identity) -> dict[str, str]:
    """The selector an automatic profile stores: exactly the fields of the fingerprint."""
    sel = {
        "vid": identity.vid or "",
        "pid": identity.pid or "",
        "serial_number": identity.serial_number or "",
    }
    if identity.interface:
        sel["interface"] = identity.interface
    return {k: v for k, v in sel.items() if v}


def _sanitize(text: str) -> str:
    """Name-safe ASCII: accents dropped (``Ü`` -> ``u``), every other run of junk -> ``-``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _LABEL_JUNK.sub("-", ascii_text).strip("-._").lower()


def auto_profile_name(port: PortInfo, taken: Collection[str] = ()) -> str:
    """``auto-<product>-<serial>`` (sanitized, at most 64 characters), with ``-2``, ``-3`` ...
    appended while the name is in ``taken``."""
    ident = identity_of(port)
    model = ident.product or ident.manufacturer or (f"{ident.vid}-{ident.pid}" if ident.vid else "")
    unit = ident.serial_number or ""
    label = "-".join(p for p in (_sanitize(model), _sanitize(unit)) if p) or "device"
    n = 1
    while True:
        suffix = "" if n == 1 else f"-{n}"
        room = MAX_NAME - len(AUTO_PREFIX) - len(suffix)
        name = f"{AUTO_PREFIX}{label[:room].rstrip('-._')}{suffix}"
        if name not in taken:
            return name
        n += 1


def most_recent_first(profiles: Sequence[P]) -> list[P]:
    """Most recently used first (then most recently updated, then by name)."""
    by_name = sorted(profiles, key=lambda p: p.name)
    return sorted(by_name, key=lambda p: (p.last_used or _EPOCH, p.updated or _EPOCH), reverse=True)


def _weak_why(identity: Identity) -> str:
    if identity.confidence == "medium":
        if identity.vid and identity.pid:
            return messages.PROFILE_WHY_NO_SERIAL.format(vid=identity.vid, pid=identity.pid)
        return messages.PROFILE_WHY_PARTIAL_USB
    if identity.confidence == "low":
        return messages.PROFILE_WHY_DESCRIPTION
    return messages.PROFILE_WHY_PATH


def plan_bare_open(
    port: PortInfo,
    all_ports: Sequence[PortInfo],
    profiles: Sequence[ProfileView],
    profile_mode: str = "auto",
) -> OpenPlan:
    """Decide what a bare ``open(port)`` does: reuse the most recently used matching profile of
    a high-confidence device no other connected port can be confused with; otherwise generate an
    ``auto-<label>`` profile for it; anything weaker (or ``profile_mode="none"``) is transient.

    ``all_ports`` is the current ``list_ports`` view (used to detect duplicate fingerprints);
    ``profiles`` the stored profiles. Raises InvalidArgument for an unknown ``profile_mode``.
    """
    if profile_mode not in PROFILE_MODES:
        raise InvalidArgument(
            messages.PROFILE_BAD_MODE.format(value=profile_mode, allowed=", ".join(PROFILE_MODES))
        )
    ident = identity_of(port)
    matches = most_recent_first([p for p in profiles if selector_matches(p.selector, port)])
    names = tuple(p.name for p in matches)
    if profile_mode == "none":
        return OpenPlan("transient", messages.PROFILE_PLAN_DISABLED, ident, candidates=names)
    if ident.confidence != "high":
        hint = messages.PROFILE_PLAN_CANDIDATES.format(names=", ".join(names)) if names else ""
        reason = messages.PROFILE_PLAN_WEAK.format(
            confidence=ident.confidence, why=_weak_why(ident), hint=hint
        )
        return OpenPlan("transient", reason, ident, candidates=names)
    fp = fingerprint(ident)
    twins = sorted({p.name for p in all_ports if p.name != port.name and fingerprint(identity_of(p)) == fp})
    if twins:
        reason = messages.PROFILE_PLAN_DUPLICATE.format(
            fingerprint=fp, count=len(twins) + 1, ports=", ".join([port.name, *twins])
        )
        return OpenPlan("transient", reason, ident, candidates=names)
    if matches:
        chosen = matches[0]
        others = messages.PROFILE_PLAN_OTHERS.format(names=", ".join(names[1:])) if len(names) > 1 else ""
        reason = messages.PROFILE_PLAN_REUSE.format(name=chosen.name, revision=chosen.revision, others=others)
        return OpenPlan("reuse", reason, ident, profile=chosen.name, candidates=names)
    name = auto_profile_name(port, {p.name for p in profiles})
    reason = messages.PROFILE_PLAN_GENERATE.format(name=name, fingerprint=fp)
    return OpenPlan("generate", reason, ident, profile=name, selector=generated_selector(ident))


# --- issue 23.3: following a device across re-enumeration -----------------------------------------


def can_follow(identity: Identity) -> bool:
    """A device that can be found again under another node: a serial number (with VID:PID), or
    VID:PID plus the USB location path (the physical socket it is plugged into)."""
    if identity.confidence == "high":
        return True
    return identity.confidence == "medium" and bool(identity.vid and identity.pid and identity.location)


def is_same_device(identity: Identity, port: PortInfo) -> bool:
    """Is ``port`` the device ``identity`` describes? By serial number when it has one (a
    different serial on the same node is another board), else by VID:PID and USB location."""
    other = identity_of(port)
    if (other.vid, other.pid, other.interface) != (identity.vid, identity.pid, identity.interface):
        return False
    if identity.serial_number is not None:
        return other.serial_number == identity.serial_number
    return identity.location is not None and other.location == identity.location


def locate(identity: Identity, ports: Sequence[PortInfo]) -> list[PortInfo]:
    """Every port that is the device of ``identity`` now (normally one; none while it is off the bus)."""
    return [p for p in ports if is_same_device(identity, p)]


def describe_device(identity: Identity) -> str:
    """How messages name a followed device: ``usb 303a:1001 serial 7C:DF:A1`` or ``... at 1-1.2``."""
    unit = (
        f"serial {identity.serial_number}"
        if identity.serial_number is not None
        else f"at {identity.location}"
    )
    return f"usb {identity.vid}:{identity.pid} {unit}"
