"""Device profiles: one TOML file shared by every serial-mcp process on the machine.

Each profile remembers a device (``selector``) and how to talk to it (``defaults``), with a
revision number for compare-and-swap and the 5 previous revisions for rollback. What a profile
is and how revisions are made lives in ``core.profile_model`` / ``core.profile_revisions``; the
TOML text in ``store.profile_toml``; the durable write in ``store.atomic``. This module is the
store: the file's path, the cache, the locks and the read-apply-write cycle.

Every mutation runs: in-process lock -> ``filelock`` on ``<file>.lock`` -> re-read the file ->
apply -> write a temp file in the same directory -> flush + fsync -> ``os.replace`` -> fsync the
directory -> publish to the in-memory cache -> unlock. Nothing touches the real file before
``os.replace``, so any failure (or a crash) leaves it byte-identical; an unreadable, corrupt or
future-version file is refused and never written.
"""

from __future__ import annotations

import builtins
import copy
import os
import re
import threading
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import platformdirs

from serial_mcp import messages
from serial_mcp.core.identity import most_recent_first, selector_matches, validate_selector
from serial_mcp.core.port_info import PortInfo
from serial_mcp.core.profile_model import (
    DEFAULT_FIELDS,
    SCHEMA_VERSION,
    ProfileStoreError,
    check_keys,
    check_revision_arg,
    profiles_from_document,
    same,
    validate_defaults,
    validate_name,
)
from serial_mcp.core.profile_model import Profile as Profile  # re-exported: the engine's name
from serial_mcp.core.profile_revisions import (
    EMPTY_SNAPSHOT,
    Op,
    Snapshot,
    check_cas,
    conflict,
    existing_profile,
    fresh_profile,
    known_profiles,
    next_revision,
    with_key_after,
    with_profile,
)
from serial_mcp.errors import Conflict, ErrorCode, InvalidArgument, LimitReached, SerialMcpError, StorageError
from serial_mcp.store.atomic import remove_stale_temps, replace_atomic

if TYPE_CHECKING:
    import filelock

PROFILES_ENV: Final = "SERIAL_MCP_PROFILES"
APP_NAME: Final = "serial-mcp"
FILE_NAME: Final = "profiles.toml"

MAX_PROFILES: Final = 1000  # each save rewrites the whole file: an unbounded store grows every save
_LOCK_POLL_S = 0.005  # lock hand-over latency between processes; polling a local lock is cheap

_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


def _exists(message: str, current: Profile) -> SerialMcpError:
    return Conflict(
        ErrorCode.PROFILE_EXISTS,
        message.format(name=current.name, revision=current.revision),
        profile=current.name,
        revision=current.revision,
    )


def _require_room(snap: Snapshot) -> None:
    """A new profile needs room in the store (``resource_limit`` past ``MAX_PROFILES``)."""
    if len(snap.profiles) >= MAX_PROFILES:
        raise LimitReached(ErrorCode.RESOURCE_LIMIT, messages.PROFILES_FULL.format(max=MAX_PROFILES))


# --- paths -----------------------------------------------------------------------------------------


def default_profiles_path() -> Path:
    """``<user config dir>/serial-mcp/profiles.toml`` (platformdirs: XDG, macOS, Windows)."""
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / FILE_NAME


def resolve_profiles_path(flag: str | None, env: Mapping[str, str]) -> Path:
    """The profiles file to use: ``--profiles-path`` > ``$SERIAL_MCP_PROFILES`` > default.

    Empty values count as unset; ``~`` is expanded and the result made absolute (so a later
    change of working directory cannot move the store).
    """
    for candidate in (flag, env.get(PROFILES_ENV)):
        if candidate:
            return Path(candidate).expanduser().absolute()
    return default_profiles_path()


# --- the store -------------------------------------------------------------------------------------------


def _process_lock(path: Path) -> threading.Lock:
    key = os.path.normcase(str(path))
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(key, threading.Lock())


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ProfileStore:
    """The profiles file: cached reads, locked compare-and-swap writes.

    Reads (``list``, ``get``, ``find_matches``) re-read the file and re-parse it only when its
    bytes changed, so every process sees the others' writes. Mutations are serialised by an
    in-process lock plus ``<file>.lock`` and always start from a fresh read under the lock, so
    no update is lost. All methods block (file I/O, fsync, lock waits up to ``lock_timeout``):
    call them from a worker thread in async code. Every failure is a ``SerialMcpError``:
    ``invalid_argument``, ``profile_not_found``, ``profile_exists``, ``revision_conflict``,
    ``profile_store_invalid`` (ProfileStoreError) or ``profile_store_io``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lock_timeout: float = 10.0,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        # Symlinks are followed, so a symlinked config (dotfile managers) stays a symlink.
        self.path: Final = Path(path).expanduser().resolve()  # the TOML file
        self.lock_path: Final = self.path.with_name(self.path.name + ".lock")
        self._lock_timeout = lock_timeout
        self._clock = clock
        self._thread_lock = _process_lock(self.path)
        self._file_lock: filelock.FileLock | None = None  # made by the first write (see _mutate)
        self._cache: Snapshot | None = None

    # -- reads --------------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read and validate the file now (a missing file is an empty store and is not created).

        Raises ProfileStoreError for an unreadable, corrupt or future-version file: at startup,
        print its message and exit non-zero.
        """
        self._current()

    def list(self) -> builtins.list[Profile]:
        """Every profile, sorted by name."""
        snap = self._current()
        return [copy.deepcopy(snap.profiles[name]) for name in sorted(snap.profiles)]

    def get(self, name: str) -> Profile | None:
        """The profile called ``name``, or None."""
        found = self._current().profiles.get(name)
        return None if found is None else copy.deepcopy(found)

    def find_matches(self, port: PortInfo) -> builtins.list[Profile]:
        """Profiles whose selector matches ``port``, most recently used first."""
        snap = self._current()
        matches = [p for p in snap.profiles.values() if selector_matches(p.selector, port)]
        return [copy.deepcopy(p) for p in most_recent_first(matches)]

    # -- mutations ------------------------------------------------------------------------------------------

    def create(
        self,
        name: str,
        selector: Mapping[str, Any],
        defaults: Mapping[str, Any],
        generated: bool = False,
    ) -> Profile:
        """Create a new profile at revision 1; ``profile_exists`` if the name is taken."""
        name = validate_name(name)
        sel = validate_selector(selector)
        dflt = validate_defaults(defaults)

        def op(snap: Snapshot, now: datetime) -> dict[str, Any]:
            current = snap.profiles.get(name)
            if current is not None:
                raise _exists(messages.PROFILE_EXISTS, current)
            _require_room(snap)
            return with_profile(snap.data, name, fresh_profile(sel, dflt, now, generated))

        return self._result(self._mutate(op), name)

    def update(
        self,
        name: str,
        *,
        expected_revision: int | None,
        selector: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
        replace: bool = False,
        unset: Collection[str] = (),
    ) -> Profile:
        """Change a profile as a new revision (the old one goes to ``history``).

        ``selector`` (if given) replaces the whole selector. ``defaults`` is merged: only the
        fields given change (None values are ignored); ``unset`` names fields to remove;
        ``replace=True`` makes ``defaults`` the complete new defaults instead. A change that
        changes nothing writes nothing and returns the profile as it is (same revision).

        ``expected_revision`` is the compare-and-swap guard: if the stored revision differs,
        ``revision_conflict`` (naming both) and nothing is written. None applies the change to
        whatever is current - safe for a merge of explicit fields, never a lost update, because
        the merge happens on a fresh read under the lock.
        """
        name = validate_name(name)
        expected = check_revision_arg("expected_revision", expected_revision)
        sel = None if selector is None else validate_selector(selector)
        if replace and defaults is None:
            raise InvalidArgument(messages.PROFILE_REPLACE_NEEDS_DEFAULTS)
        given = {} if defaults is None else validate_defaults(defaults)
        removed = [unset] if isinstance(unset, str) else builtins.list(unset)
        check_keys(dict.fromkeys(removed), DEFAULT_FIELDS, "unset")
        for key in removed:
            if key in given:
                raise InvalidArgument(messages.PROFILE_UNSET_AND_SET.format(key=key))

        def op(snap: Snapshot, now: datetime) -> dict[str, Any] | None:
            current = existing_profile(snap, name, expected)
            if replace:
                merged = dict(given)
            else:
                merged = copy.deepcopy(current.defaults)
                merged.update(given)
            for key in removed:
                merged.pop(key, None)
            merged = validate_defaults(merged)
            new_sel = current.selector if sel is None else sel
            if same(new_sel, current.selector) and same(merged, current.defaults):
                return None
            return with_profile(snap.data, name, next_revision(snap, current, new_sel, merged, now))

        return self._result(self._mutate(op), name)

    def save(
        self,
        name: str,
        selector: Mapping[str, Any],
        defaults: Mapping[str, Any],
        overwrite: bool,
        expected_revision: int | None = None,
    ) -> Profile:
        """Create ``name``, or with ``overwrite`` replace its selector and defaults as a new
        revision (it then counts as user-made: ``generated`` becomes false).

        Without ``overwrite`` an existing name is ``profile_exists``. With ``expected_revision``
        the replace is compare-and-swap (a profile deleted meanwhile is a ``revision_conflict``).
        """
        name = validate_name(name)
        sel = validate_selector(selector)
        dflt = validate_defaults(defaults)
        expected = check_revision_arg("expected_revision", expected_revision)

        def op(snap: Snapshot, now: datetime) -> dict[str, Any] | None:
            current = snap.profiles.get(name)
            if current is None:
                if expected is not None:
                    raise conflict(name, None, expected)
                _require_room(snap)
                return with_profile(snap.data, name, fresh_profile(sel, dflt, now, False))
            if not overwrite:
                raise _exists(messages.PROFILE_EXISTS_SAVE, current)
            check_cas(current, expected)
            if same(sel, current.selector) and same(dflt, current.defaults) and not current.generated:
                return None
            pdata = next_revision(snap, current, sel, dflt, now, generated=False)
            return with_profile(snap.data, name, pdata)

        return self._result(self._mutate(op), name)

    def delete(self, name: str, expected_revision: int | None = None) -> Profile:
        """Remove a profile (compare-and-swap when ``expected_revision`` is given); returns it
        as it was."""
        name = validate_name(name)
        expected = check_revision_arg("expected_revision", expected_revision)
        deleted: builtins.list[Profile] = []

        def op(snap: Snapshot, now: datetime) -> dict[str, Any]:
            deleted.append(existing_profile(snap, name, expected))
            return with_profile(snap.data, name, None)

        self._mutate(op)
        return deleted[0]

    def rollback(self, name: str, to_revision: int, expected_revision: int | None) -> Profile:
        """Restore the selector and defaults of retained revision ``to_revision`` as a new
        revision (history is never rewritten), guarded by ``expected_revision``."""
        name = validate_name(name)
        target = check_revision_arg("to_revision", to_revision)
        expected = check_revision_arg("expected_revision", expected_revision)
        if target is None:
            raise InvalidArgument(
                messages.PROFILE_BAD_FIELD.format(
                    field="to_revision", expected=messages.PROFILE_EXPECT_REVISION, value=to_revision
                )
            )

        def op(snap: Snapshot, now: datetime) -> dict[str, Any]:
            current = existing_profile(snap, name, expected)
            if target == current.revision:
                raise InvalidArgument(messages.PROFILE_ROLLBACK_CURRENT.format(name=name, revision=target))
            entry = next((h for h in current.history if h.revision == target), None)
            if entry is None:
                retained = ", ".join(str(h.revision) for h in current.history) or "none"
                raise InvalidArgument(
                    messages.PROFILE_ROLLBACK_UNKNOWN.format(name=name, revision=target, retained=retained)
                )
            pdata = next_revision(snap, current, entry.selector, entry.defaults, now)
            return with_profile(snap.data, name, pdata)

        return self._result(self._mutate(op), name)

    def touch_used(self, name: str) -> Profile:
        """Record a use (``last_used`` = now, ``use_count`` + 1). Not a revision: no
        compare-and-swap, no history, and callers' ``expected_revision`` stays valid."""
        name = validate_name(name)

        def op(snap: Snapshot, now: datetime) -> dict[str, Any]:
            current = existing_profile(snap, name, None)
            old = snap.data["profiles"][name]
            meta = with_key_after(dict(old.get("metadata", {})), "updated", "last_used", now)
            meta["use_count"] = current.use_count + 1
            return with_profile(snap.data, name, {**old, "metadata": meta})

        return self._result(self._mutate(op), name)

    # -- machinery -------------------------------------------------------------------------------------------

    def _result(self, snap: Snapshot, name: str) -> Profile:
        return copy.deepcopy(snap.profiles[name])

    def _now(self) -> datetime:
        now = self._clock()
        return now if now.tzinfo is not None else now.replace(tzinfo=UTC)

    def _read_raw(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ProfileStoreError(
                messages.PROFILE_STORE_UNREADABLE.format(path=self.path, error=exc.strerror or exc)
            ) from exc

    def _snapshot_of(self, raw: bytes | None) -> Snapshot:
        cached = self._cache
        if cached is not None and cached.raw == raw:
            return cached
        if raw is None:
            return EMPTY_SNAPSHOT
        import tomllib  # only when there is a profile file (issue 27: start-up)

        try:
            text = raw.decode("utf-8-sig")
            if nesting_depth(text) > MAX_FILE_NESTING:
                raise ProfileStoreError(messages.PROFILE_STORE_TOO_DEEP.format(path=self.path))
            data = tomllib.loads(text)
        except UnicodeDecodeError as exc:
            raise ProfileStoreError(
                messages.PROFILE_STORE_CORRUPT.format(path=self.path, error=f"not UTF-8 text: {exc.reason}")
            ) from exc
        except tomllib.TOMLDecodeError as exc:
            raise ProfileStoreError(messages.PROFILE_STORE_CORRUPT.format(path=self.path, error=exc)) from exc
        except RecursionError:  # the pre-scan missed a form of nesting; the stack has unwound here
            raise ProfileStoreError(messages.PROFILE_STORE_TOO_DEEP.format(path=self.path)) from None
        return Snapshot(raw, data, profiles_from_document(data, self.path, known_profiles(cached)))

    def _current(self) -> Snapshot:
        snap = self._snapshot_of(self._read_raw())
        self._cache = snap
        return snap

    def _mutate(self, op: Op) -> Snapshot:
        """Run one locked read-apply-write cycle; returns the published snapshot."""
        import filelock  # a store that is only read never loads it (issue 27: ~0.6 MB of idle memory)

        with self._thread_lock:
            if self._file_lock is None:
                self._file_lock = filelock.FileLock(str(self.lock_path))
            file_lock = self._file_lock
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                file_lock.acquire(timeout=self._lock_timeout, poll_interval=_LOCK_POLL_S)
            except filelock.Timeout as exc:
                raise StorageError(
                    ErrorCode.PROFILE_STORE_IO,
                    messages.PROFILE_STORE_LOCK_TIMEOUT.format(
                        seconds=self._lock_timeout, lock=self.lock_path
                    ),
                ) from exc
            except OSError as exc:
                raise StorageError(
                    ErrorCode.PROFILE_STORE_IO,
                    messages.PROFILE_STORE_WRITE_FAILED.format(path=self.path, error=exc),
                ) from exc
            try:
                snap = self._current()
                new_data = op(snap, self._now())
                if new_data is None:
                    return snap
                if "schema_version" not in new_data:
                    new_data = {"schema_version": SCHEMA_VERSION, **new_data}
                from serial_mcp.store.profile_toml import document_text, verify_failed  # tomlkit: on a write

                text = document_text(snap.raw, snap.data, new_data, self.path)
                try:
                    profiles = profiles_from_document(new_data, self.path, known_profiles(snap))
                except ProfileStoreError as exc:  # a bug here must never reach the disk
                    raise verify_failed(self.path, exc.message) from exc
                raw = text.encode("utf-8")
                try:
                    remove_stale_temps(self.path)  # a crashed writer's; safe: we hold the lock
                    replace_atomic(self.path, raw)
                except OSError as exc:
                    raise StorageError(
                        ErrorCode.PROFILE_STORE_IO,
                        messages.PROFILE_STORE_WRITE_FAILED.format(path=self.path, error=exc.strerror or exc),
                    ) from exc
                published = Snapshot(raw, new_data, profiles)
                self._cache = published
                return published
            finally:
                file_lock.release()


# Brackets and braces in a TOML text, outside strings and comments: how deep its values nest.
_NESTING_TOKENS: Final = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]',
    re.DOTALL,
)
MAX_FILE_NESTING: Final = 128  # above any profile (MAX_NESTING, 32), below where tomllib recurses out


def nesting_depth(text: str) -> int:
    """The deepest nesting of ``[`` / ``{`` in ``text``, strings and comments skipped.

    Checked before parsing, so a file nested thousands of levels deep is refused the same way
    whatever the interpreter's recursion limit is (tomllib recurses once per level).
    """
    depth = deepest = 0
    for token in _NESTING_TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest
