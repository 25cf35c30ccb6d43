"""The ledger's files on disk: owner-only permissions (0600) and the exclusive run lock beside the ledger."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from filelock import FileLock, Timeout

from videoferry.state.errors import LedgerBusyError, LedgerError

FILE_MODE = 0o600
# SQLite's companions of a WAL database; it creates them with the database file's mode, we re-check anyway.
COMPANION_SUFFIXES: tuple[str, ...] = ("-wal", "-shm", "-journal")


def create_private(path: Path) -> bool:
    """Create path empty with mode 0600 unless it exists (whatever the umask); True when it was created."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)  # the umask may have removed bits we need (it can never add any)
    finally:
        os.close(fd)
    return True


def secure(path: Path) -> None:
    """Make the ledger and its companion files owner-only (0600) where they exist and we own them."""
    for candidate in (path, *(path.with_name(path.name + s) for s in COMPANION_SUFFIXES)):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if candidate.stat().st_mode & 0o777 != FILE_MODE:
                candidate.chmod(FILE_MODE)


def lock_path(path: Path) -> Path:
    """Where the run lock of a ledger lives: beside it, '<ledger>.lock'."""
    return path.with_name(path.name + ".lock")


class RunLock:
    """An exclusive, non-blocking OS lock (flock) on '<ledger>.lock' held for the length of one run.

    The kernel drops it when the holding process dies (even by SIGKILL), so a crash never leaves a stale lock.
    """

    def __init__(self, ledger_path: Path) -> None:
        self.ledger_path = ledger_path
        self.path = lock_path(ledger_path)
        self._lock = FileLock(
            str(self.path), timeout=0, mode=FILE_MODE, thread_local=False, fallback_to_soft=False
        )

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._lock.is_locked

    def acquire(self, describe_holder: str) -> None:
        """Take the lock or raise LedgerBusyError at once (describe_holder: who is believed to hold it)."""
        if self._lock.is_locked:
            return
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise LedgerBusyError(
                f"ledger {self.ledger_path} is in use by another run{describe_holder}; "
                "wait for it to finish or use another ledger"
            ) from None
        except OSError as exc:
            raise LedgerError(f"cannot take the run lock {self.path}: {exc.strerror or exc}") from None

    def release(self) -> None:
        """Give the lock back (no-op when not held)."""
        if self._lock.is_locked:
            self._lock.release(force=True)
