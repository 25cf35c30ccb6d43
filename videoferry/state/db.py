"""The ledger's connection: opening and checking the file, pragmas, the lock, and short write transactions."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from videoferry.core.transaction import immediate, use_wal
from videoferry.state import schema
from videoferry.state.errors import LedgerBusyError, LedgerError
from videoferry.state.files import create_private, secure
from videoferry.state.models import format_time

_SQLITE_HEADER = b"SQLite format 3\x00"
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6
_CACHE_KIB = -32768  # PRAGMA cache_size: negative is KiB (32 MiB, used only as pages are read or written)


#: This process's open connections per ledger file (its resolved path). Closing any descriptor of a file
#: drops every POSIX lock the process holds on it, those its SQLite connections hold too: the file's creation
#: and the check of its header (each a descriptor of ours) happen only while no connection of ours holds it.
_held: Counter[Path] = Counter()
_held_lock = threading.Lock()


def _hold(path: Path, create: bool) -> Path:
    """Count a connection about to open the file: the first is preceded by its creation (create) and the check
    of its header (LedgerError when missing or not SQLite). Returns the key to _release."""
    key = path.resolve()
    with _held_lock:
        if not _held[key]:
            _create_or_check(path, create)
        _held[key] += 1
    return key


def _release(key: Path) -> None:
    """Uncount a connection once closed (or never opened)."""
    with _held_lock:
        _held[key] -= 1
        if _held[key] <= 0:
            del _held[key]


def _create_or_check(path: Path, create: bool) -> None:
    """Create the file (mode 0600) when missing and create is set; check that it starts as a SQLite file."""
    if not path.exists():
        if not create:
            raise LedgerError(f"ledger {path} does not exist")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            create_private(path)
        except OSError as exc:
            raise LedgerError(f"cannot create ledger {path}: {exc.strerror or exc}") from None
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {path}: {exc.strerror or exc}") from None
    if header and header != _SQLITE_HEADER[: len(header)]:
        raise LedgerError(f"ledger {path} is not a valid videoferry ledger: not a SQLite file")


def utcnow() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def fetch(conn: sqlite3.Connection, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """Rows of a query as dicts (column -> value)."""
    cursor = conn.execute(sql, tuple(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class LedgerDB:
    """One open ledger file: a single connection behind a re-entrant lock, its clock, and its error rules."""

    def __init__(
        self, path: Path, conn: sqlite3.Connection, clock: Callable[[], datetime], key: Path
    ) -> None:
        self.path = path
        self.conn = conn
        self.db = Database(conn, execute_plugins=False)
        self.clock = clock
        self.lock = threading.RLock()
        self.closed = False
        #: Reads kept while the file is as it was (LedgerReader.summary): name -> (version(), value).
        self.kept: dict[str, tuple[tuple[int, int], Any]] = {}
        #: Called before every intent is written (a create's, an operation's, a unit's); raising refuses it.
        #: A remote ledger's holder sets it: no call is made once its writes can no longer reach the replica.
        self.intent_guard: Callable[[], None] | None = None
        #: The file's key among this process's counted connections (_hold), released by close().
        self.key = key

    def guard_intent(self) -> None:
        """Run the intent guard (nothing when none is set)."""
        if self.intent_guard is not None:
            self.intent_guard()

    @classmethod
    def open(
        cls, path: Path, *, create: bool, busy_timeout: float, clock: Callable[[], datetime]
    ) -> LedgerDB:
        """Open (or create, mode 0600) and check a ledger file; see Ledger.open for the errors."""
        if path.is_dir():
            raise LedgerError(f"ledger {path} is a directory, not a ledger file")
        key = _hold(path, create)
        try:
            secure(path)
            try:
                conn = sqlite3.connect(
                    str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
                )
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot open ledger {path}: {exc}") from None
            opened = cls(path, conn, clock, key)
            try:
                opened._prepare(busy_timeout, create)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            _release(key)
            raise
        return opened

    def _prepare(self, busy_timeout: float, create: bool) -> None:
        conn = self.conn
        with self.guard():
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = use_wal(conn, busy_timeout)
            if mode.lower() != "wal":
                raise LedgerError(f"ledger {self.path}: cannot switch to WAL journal (mode {mode})")
            # FULL: a committed intent survives a power cut, not only a crash (the duplicate rule needs it).
            conn.execute("PRAGMA synchronous = FULL")
            # A page cache big enough for a large plan's one transaction (pages spilt early cost writes).
            conn.execute(f"PRAGMA cache_size = {_CACHE_KIB}")
            if not schema.user_tables(conn):
                if not create:
                    raise LedgerError(f"ledger {self.path} is not a valid videoferry ledger: it is empty")
                with immediate(conn):
                    if not schema.user_tables(conn):
                        schema.create(conn, self.now())
            problem = schema.problem(conn)
            if problem:
                raise LedgerError(f"ledger {self.path} is not a valid videoferry ledger: {problem}")
            if schema.stored_version(conn) != schema.SCHEMA_VERSION:
                with immediate(conn):
                    schema.upgrade(conn)
            check = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if check != "ok":
                check = " ".join(str(check).replace("***", "").split())[:200]
                raise LedgerError(
                    f"ledger {self.path} is not a valid videoferry ledger: integrity check: {check}"
                )
        secure(self.path)

    def close(self) -> bool:
        """Close the file; False when it was already closed."""
        with self.lock:
            if self.closed:
                return False
            self.closed = True
            self.conn.close()
            _release(self.key)
        secure(self.path)
        return True

    def version(self) -> tuple[int, int]:
        """What changes whenever the file's content may have: the rows this connection wrote so far and
        SQLite's data_version (it moves when another connection commits). Call under the lock."""
        data_version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        return self.conn.total_changes, int(data_version)

    def now(self) -> str:
        """The clock's time as the ledger stores it."""
        return format_time(self.clock())

    def check_open(self) -> None:
        """Raise LedgerError once the file is closed."""
        if self.closed:
            raise LedgerError(f"ledger {self.path} is closed")

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Translate SQLite failures into LedgerError / LedgerBusyError naming the file."""
        try:
            yield
        except sqlite3.Error as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
                raise LedgerBusyError(
                    f"ledger {self.path} is locked: another run may be using it ({exc})"
                ) from None
            if isinstance(exc, sqlite3.OperationalError | sqlite3.IntegrityError):
                raise LedgerError(f"ledger {self.path}: {exc}") from None
            raise LedgerError(f"ledger {self.path} is not a valid videoferry ledger: {exc}") from None

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction (BEGIN IMMEDIATE .. COMMIT), rolled back whole on any exception."""
        with self.lock:
            self.check_open()
            with self.guard(), immediate(self.conn) as conn:
                yield conn

    @contextmanager
    def read(self) -> Iterator[Database]:
        """The sqlite-utils view of the file for read-only queries, under the lock."""
        with self.lock:
            self.check_open()
            with self.guard():
                yield self.db
