"""The firmware ELF of a connection (``open(elf=...)``, ``configure(..., {"elf": ...})``): found under the
same file rules as ``replay://`` captures, read through one checked descriptor, parsed once per
(real path, mtime, size) and shared, and asked for the frames of a crash's addresses.

Where an ELF may be read (:class:`ElfScope`): the capture directory and the working directory's
``captures/`` (as ``replay://``), the paths the allowlist's ``replay://`` patterns admit, and the
operator's firmware build directories (``--firmware-dir``). A relative name is looked up in the working
directory, then each of those directories. Everything else is ``not_allowed`` with one message,
whatever exists there. An image over ``MAX_ELF_BYTES`` is ``resource_limit``; a file that is not an
ELF, or one pyelftools cannot read, is ``invalid_argument``. The CLI's ``--elf`` (``decode --events``,
``view``) is a local user's own file: :func:`load_local_elf` reads any path they name, under the same
descriptor, size and ELF checks and the same cache. Parsing costs about a second per MB of
DWARF: callers run :func:`load_elf` in a worker thread, never on the event loop.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from serial_mcp import messages
from serial_mcp.errors import AccessError, ErrorCode, InvalidArgument, LimitReached
from serial_mcp.serial.replay_files import ReplayScope, real_path

if TYPE_CHECKING:
    from serial_mcp.core.elf_symbols import ElfSymbols
    from serial_mcp.core.events import Event

CACHE_SIZE: Final = 4  # parsed ELFs kept (each can hold tens of MB of DWARF state)
MAX_ADDRESSES: Final = 24  # addresses of one event decoded (the PC and the first backtrace frames)


@dataclass(frozen=True, slots=True)
class ElfScope:
    """Where a firmware ELF may be read from; see the module docstring."""

    captures_dir: Path | None = None
    firmware_dirs: tuple[Path, ...] = ()
    globs: Callable[[], list[str]] | None = None  # the allowlist's replay:// globs

    def _replay(self) -> ReplayScope:
        return ReplayScope(self.captures_dir, self.globs)

    def bases(self) -> list[Path]:
        cwd = Path.cwd()
        dirs = [cwd / d for d in self.firmware_dirs]
        dirs += [cwd / self.captures_dir] if self.captures_dir is not None else []
        return list(dict.fromkeys([cwd, *dirs, cwd / "captures"]))

    def admits(self, real: str) -> bool:
        if self._replay().admits(real):
            return True
        return any(_below(real_path(Path.cwd() / d), real) for d in self.firmware_dirs)

    def resolve(self, name: str) -> str:
        """The real path of the first candidate in scope that exists (else the first in scope)."""
        if not isinstance(name, str) or not name.strip() or "\x00" in name:
            raise InvalidArgument(messages.ELF_BAD_NAME)
        given = Path(name).expanduser()
        candidates = [given] if given.is_absolute() else [b / given for b in self.bases()]
        admitted = [r for c in candidates if self.admits(r := real_path(c))]
        if not admitted:
            raise AccessError(ErrorCode.NOT_ALLOWED, messages.ELF_REFUSED.format(path=name))
        for real in admitted:
            if os.path.isfile(real):
                return real
        raise InvalidArgument(messages.ELF_NOT_FOUND.format(path=name))


def _below(directory: str, path: str) -> bool:
    return os.path.commonpath([directory, path]) == directory


@dataclass(slots=True)
class LoadedElf:
    """One parsed ELF, shared by the connections that use it (lookups take its lock: a first lookup
    in a compile unit reads that unit, which is not safe from two threads at once)."""

    path: str
    mtime_ns: int
    size: int
    symbols: ElfSymbols
    lock: threading.Lock = field(default_factory=threading.Lock)

    def decode(self, addresses: Iterable[int | None]) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """Each distinct address (None skipped, at most ``MAX_ADDRESSES``) with its frames, innermost
        first, as ``function at file:line``; addresses the image does not cover are left out."""
        return self._decode((a, a) for a in addresses)

    def decode_event(self, event: Event) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """The frames of an event's program counter, then of its callers, then of its backtrace (see
        :meth:`decode`). The callers are the return addresses the report printed: a link register
        (``lr``, ``ra``: Cortex-M's LR, RISC-V's RA), Mbed OS's ``Location`` (``caller``) and
        CmBacktrace's call stack (``calls``, the PC aside). Each is looked up as addr2line users do, with
        the Thumb bit cleared and one subtracted, so the call's own line is found, not the next one's;
        each is keyed as printed."""
        detail = event.detail
        pairs: list[tuple[int | None, int | None]] = [(event.pc, event.pc)]
        for key in _RETURN_KEYS:
            for value in _hexes(detail.get(key)):
                returns = value != event.pc  # CmBacktrace's call stack starts with the PC of a fault
                pairs.append((value, (value & ~1) - 1 if returns and value > 1 else value))
        pairs += [(a, a) for a in event.backtrace]
        return self._decode(pairs)

    def _decode(
        self, pairs: Iterable[tuple[int | None, int | None]]
    ) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """``(address as printed, address looked up)`` pairs: each looked-up address once."""
        out: list[tuple[int, tuple[str, ...]]] = []
        done: set[int] = set()
        with self.lock:
            for shown, address in pairs:
                if shown is None or address is None or address in done or len(done) >= MAX_ADDRESSES:
                    continue
                done.add(address)
                frames = self.symbols.lookup(address)
                if frames:
                    out.append((shown, tuple(str(f) for f in frames)))
        return tuple(out)


_RETURN_KEYS: Final = ("lr", "ra", "caller", "calls")  # detail fields holding return addresses (see above)


def _hexes(value: str | None) -> list[int]:
    """The hex numbers of a detail value (``0x0000004f``, ``0000004F``, ``00000040 0000004e ...``)."""
    if not value:
        return []
    out = []
    for word in value.split()[:MAX_ADDRESSES]:
        try:
            out.append(int(word, 16))
        except ValueError:
            continue
    return out


_cache: OrderedDict[tuple[str, int, int], LoadedElf] = OrderedDict()
_cache_lock = threading.Lock()


def load_elf(name: str, scope: ElfScope) -> LoadedElf:
    """Find, read and parse ``name`` (blocking: call in a worker thread); cached per real path, mtime
    and size, so a rebuilt firmware is read again and an unchanged one is not. pyelftools is imported
    here, by the first ``open(elf=...)``: a server that decodes no backtrace never loads it."""
    import serial_mcp.core.elf_symbols  # noqa: F401  (loaded by the first open(elf=...), found or not)

    return _load(scope.resolve(name), name, messages.ELF_NOT_FOUND)


def load_local_elf(path: str) -> LoadedElf:
    """The CLI's ``--elf``: any file the user names (blocking), checked and cached as :func:`load_elf`'s;
    a missing one, or one that is not a regular file, is ``invalid_argument`` saying so."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise InvalidArgument(messages.ELF_BAD_NAME)
    real = real_path(Path(path).expanduser())
    if not os.path.lexists(real):
        raise InvalidArgument(messages.CLI_ELF_NOT_FOUND.format(path=path))
    return _load(real, path, messages.CLI_ELF_NOT_REGULAR)


def _load(real: str, name: str, not_regular: str) -> LoadedElf:
    """Read and parse the file at the real path ``real`` through one descriptor, or take it from the cache."""
    from serial_mcp.core.elf_symbols import MAX_ELF_BYTES, ElfSymbols

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise InvalidArgument(messages.ELF_READ_FAILED.format(path=name, error=exc.strerror or exc)) from None
    try:  # judged on the descriptor before a file object is made: a directory's cannot be
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidArgument(not_regular.format(path=name))
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        key = (real, st.st_mtime_ns, st.st_size)
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
        if st.st_size > MAX_ELF_BYTES:
            raise LimitReached(
                ErrorCode.RESOURCE_LIMIT, messages.ELF_TOO_LARGE.format(size=st.st_size, max=MAX_ELF_BYTES)
            )
        data = f.read(MAX_ELF_BYTES + 1)
    symbols = ElfSymbols.parse(data)  # resource_limit / invalid_argument with the reason
    loaded = LoadedElf(real, st.st_mtime_ns, st.st_size, symbols)
    with _cache_lock:
        _cache[key] = loaded
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return loaded
