"""Port names parsed and checked by us before any opener sees them (sans-IO).

Only device paths and the URL schemes we offer reach an opener: ``socket://``, ``rfc2217://``,
``loop://`` (pyserial), ``replay://`` and ``sim://`` (ours). pyserial's other handlers take file
names or rewrite the target (``spy://...?file=`` writes a hex dump anywhere, ``hwgrep://`` and
``alt://`` open something else) and are refused with ``not_allowed`` unless the operator enables a
scheme by name (``--enable-url-scheme``); an enabled scheme's URL is passed on as given.

Network URLs are parsed the way pyserial parses them (``urllib.parse.urlsplit``), checked strictly
(no ``user@`` part, a plain host name or IP literal, a port, only the options pyserial documents
for the scheme) and rebuilt: the opener receives ``PortTarget.open_name``, the URL that was judged.

``redact`` is how a port is named to anyone (messages, results, logs, capture headers): a URL's
user part and the values of its options are ``***`` (the options our own schemes document keep
theirs: none of them is a secret), so ``socket://admin:hunter2@…`` or ``?token=…`` given to an
operator-enabled scheme is never repeated. ``scrub`` takes those secrets out of a text (an error of
pyserial's that quotes the URL).
"""

from __future__ import annotations

import ipaddress
import math
import re
import urllib.parse
from dataclasses import dataclass
from typing import Final

from serial_mcp import messages
from serial_mcp.core.port_secrets import PYSERIAL_OPTIONS as _OPTIONS
from serial_mcp.core.port_secrets import REDACTED as REDACTED
from serial_mcp.core.port_secrets import redact as redact
from serial_mcp.core.port_secrets import scheme_of as scheme_of
from serial_mcp.core.port_secrets import scrub as scrub
from serial_mcp.errors import AccessError, ErrorCode, InvalidArgument

NETWORK_SCHEMES: Final = frozenset({"socket", "rfc2217"})
PYSERIAL_SCHEMES: Final = NETWORK_SCHEMES | {"loop"}
LAB_SCHEMES: Final = frozenset({"labgrid"})  # a labgrid place, reached through its coordinator (issue 25)
OWN_SCHEMES: Final = frozenset({"replay", "sim"}) | LAB_SCHEMES
BUILTIN_SCHEMES: Final = PYSERIAL_SCHEMES | OWN_SCHEMES
_LOG_LEVELS: Final = ("debug", "info", "warning", "error")
_SWITCH_ON: Final = frozenset({"", "1", "true", "yes", "on"})
_MAX_NET_TIMEOUT: Final = 3600.0
_SCHEME_NAME: Final = re.compile(r"[a-z][a-z0-9+.-]*")
_HOST_NAME: Final = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?")
_LAB_NAME: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.+-]*[A-Za-z0-9_])?")  # a place or resource name


@dataclass(frozen=True, slots=True)
class PortTarget:
    """What a port name stands for. ``scheme`` is None for a device path; ``host``/``port`` are set
    for network URLs; ``open_name`` is what the opener must be given (the rebuilt, judged URL)."""

    raw: str
    scheme: str | None
    open_name: str
    host: str | None = None
    port: int | None = None


def parse_scheme_name(text: str) -> str:
    """A scheme name for ``--enable-url-scheme`` (``spy``, not ``spy://``); ``ValueError`` otherwise."""
    name = text.strip().lower().removesuffix("://")
    if not _SCHEME_NAME.fullmatch(name):
        raise ValueError(messages.URL_SCHEME_NAME_BAD.format(name=text))
    return name


def check_scheme(port: str, enabled: frozenset[str] = frozenset()) -> str | None:
    """The port's scheme when it may reach an opener (a built-in one, or one the operator enabled);
    ``not_allowed`` otherwise. None for a device path."""
    scheme = scheme_of(port)
    if scheme is None or scheme in BUILTIN_SCHEMES or scheme in enabled:
        return scheme
    raise AccessError(
        ErrorCode.NOT_ALLOWED,
        messages.URL_SCHEME_REFUSED.format(scheme=scheme, offered=", ".join(sorted(BUILTIN_SCHEMES))),
    )


def parse_port(port: str, enabled: frozenset[str] = frozenset()) -> PortTarget:
    """Check ``port`` and say what it opens. ``not_allowed`` for a scheme that is not offered,
    ``invalid_argument`` for a malformed URL or an option the scheme does not take."""
    check_text(port)
    scheme = check_scheme(port, enabled)
    if scheme in NETWORK_SCHEMES:
        return _network(port, scheme)
    if scheme == "loop":
        return _loop(port)
    if scheme in LAB_SCHEMES:
        return _labgrid(port)
    return PortTarget(port, scheme, port)  # a device path, replay:// / sim:// (their openers parse), enabled


def check_text(port: str) -> None:
    """``invalid_argument`` for control characters or text that is not valid Unicode (a lone
    surrogate), which no device path or URL contains."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in port):
        raise InvalidArgument(messages.PORT_CONTROL_CHARS)
    try:
        port.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(messages.PORT_CONTROL_CHARS) from None


def _bad(port: str, problem: str) -> InvalidArgument:
    return InvalidArgument(messages.URL_BAD.format(port=port, problem=problem), port=port)


def _network(port: str, scheme: str) -> PortTarget:
    try:
        parts = urllib.parse.urlsplit(port)
    except ValueError:  # e.g. a bracketed host that is not an IPv6 address
        raise _bad(port, messages.URL_BAD_HOST) from None
    if "@" in parts.netloc:
        raise _bad(port, messages.URL_USERINFO)
    if parts.path not in ("", "/") or parts.fragment:
        raise _bad(port, messages.URL_NO_PATH)
    host_text = parts.hostname or ""
    try:
        number = parts.port
    except ValueError:
        raise _bad(port, messages.URL_BAD_PORT) from None
    if number is None or not 1 <= number <= 65535:
        raise _bad(port, messages.URL_BAD_PORT)
    if parts.netloc.startswith("["):
        try:
            host = ipaddress.IPv6Address(host_text).compressed
        except ValueError:
            raise _bad(port, messages.URL_BAD_HOST) from None
        netloc = f"[{host}]:{number}"
    else:
        if not _HOST_NAME.fullmatch(host_text) or ".." in host_text:
            raise _bad(port, messages.URL_BAD_HOST)
        host = host_text
        netloc = f"{host}:{number}"
    query = _options(port, scheme, parts.query)
    return PortTarget(port, scheme, f"{scheme}://{netloc}{query}", host, number)


def _loop(port: str) -> PortTarget:
    rest, _, query = port[len("loop://") :].partition("?")
    if rest not in ("", "/"):
        raise _bad(port, messages.URL_LOOP_NO_PATH)
    return PortTarget(port, "loop", "loop://" + _options(port, "loop", query))


def _labgrid(port: str) -> PortTarget:
    """``labgrid://PLACE[/RESOURCE]``: a place name and, for a place with several serial resources,
    the one to use; nothing else (no ``user@``, port, options or fragment: the coordinator says
    where the place's serial port is). ``host`` is the place, ``open_name`` the rebuilt URL."""
    rest = port[len("labgrid://") :]
    if any(c in rest for c in "@?#:") or rest.count("/") > 1:
        raise _bad(port, messages.LABGRID_URL_FORM)
    place, slash, resource = rest.partition("/")
    if not _LAB_NAME.fullmatch(place) or (slash and not _LAB_NAME.fullmatch(resource)):
        raise _bad(port, messages.LABGRID_URL_FORM)
    return PortTarget(port, "labgrid", f"labgrid://{rest}", host=place)


def labgrid_parts(port: str) -> tuple[str, str | None]:
    """``(place, resource or None)`` of a ``labgrid://`` URL (``invalid_argument`` when malformed)."""
    target = _labgrid(port)
    _, _, resource = target.open_name[len("labgrid://") :].partition("/")
    assert target.host is not None
    return target.host, resource or None


def _options(port: str, scheme: str, query: str) -> str:
    """The query rebuilt from checked options (``?a=b&c``), or ``""``."""
    allowed = _OPTIONS[scheme]
    names = ", ".join(allowed)
    seen: dict[str, str] = {}
    for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if key not in allowed:
            raise _bad(port, messages.URL_UNKNOWN_OPTION.format(key=key, scheme=scheme, allowed=names))
        if key in seen:
            raise _bad(port, messages.URL_DUPLICATE_OPTION.format(key=key))
        seen[key] = _option_value(port, key, value)
    if not query.strip("&") and not seen:
        return ""
    if not seen:
        raise _bad(port, messages.URL_UNKNOWN_OPTION.format(key=query, scheme=scheme, allowed=names))
    return "?" + "&".join(key if value == "" else f"{key}={value}" for key, value in seen.items())


def _option_value(port: str, key: str, value: str) -> str:
    if key == "logging":
        if value.lower() not in _LOG_LEVELS:
            raise _bad(port, messages.URL_BAD_LOGGING.format(levels=", ".join(_LOG_LEVELS)))
        return value.lower()
    if key == "timeout":
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and 0 < seconds <= _MAX_NET_TIMEOUT):
            raise _bad(port, messages.URL_BAD_TIMEOUT.format(max=f"{_MAX_NET_TIMEOUT:g}"))
        return repr(seconds)
    if value.lower() not in _SWITCH_ON:  # ign_set_control, poll_modem: pyserial turns them on when present
        raise _bad(port, messages.URL_SWITCH_VALUE.format(key=key))
    return ""
