"""The Ledger: the one writer of the SQLite ledger file (runs, items, ops, events), safe for a thread pool."""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlite_utils import Database

from core.item import ItemSpec, owes_metadata
from core.redact import sanitize, scrub
from state import queries, schema
from state.columns import SPEC_COLUMNS, dump, spec_columns, spec_from_row
from state.errors import InvalidTransition, LedgerBusyError, LedgerError, UnknownItem
from state.files import RunLock, create_private, secure
from state.machine import (
    ABORTED,
    COMPLETE_STATES,
    CREATING,
    DONE,
    ERROR,
    FAILED,
    FINISHED,
    OP_IN_PLACE,
    OP_INTENT,
    OP_KINDS,
    PLANNED,
    PROCESSING,
    UPLOADED,
    UPLOADING,
    WATCHED_STATES,
    check_op_transition,
    check_transition,
    state_for_status,
)
from state.models import Event, Item, Op, PlanResult, Run, format_time

_SQLITE_HEADER = b"SQLite format 3\x00"
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6
_PLAN_CHUNK = 900
# After these states the upload endpoint is no longer needed and is forgotten (it is a capability).
_KEEPS_ENDPOINT = frozenset({UPLOADING, FAILED})
# Columns reset when an item goes back to planned to be created again.
_VIDEO_RESET: dict[str, Any] = {
    "video_id": None,
    "source_version": None,
    "upload_endpoint": None,
    "upload_offset": 0,
    "bytes_total": None,
    "status": None,
    "created_intent_at": None,
    "create_title": None,
    "create_description": None,
    "failed_from": None,
    "error_code": None,
    "error_message": None,
    "done_at": None,
}
# States in which the service's status of the item's video may be recorded.
_STATUS_FROM = WATCHED_STATES | COMPLETE_STATES | {ERROR, ABORTED}
_CLEAR_ERROR: dict[str, Any] = {"error_code": None, "error_message": None, "failed_from": None}


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _same_but_signature(new: Any, old: Any) -> bool:
    """Whether two http(s) sources differ only in their query string or fragment (a URL signed again)."""
    if not isinstance(new, str) or not isinstance(old, str):
        return False
    if not new.lower().startswith(("http://", "https://")):
        return False
    return new.split("#", 1)[0].split("?", 1)[0] == old.split("#", 1)[0].split("?", 1)[0]


def _meta_pending(row: Mapping[str, Any]) -> int:
    """Whether the finish step owes the item of this (stored) row anything: 1 or 0."""
    spec = spec_from_row(row)
    return int(owes_metadata(spec, row["create_title"], row["create_description"]))


def _batched(rows: Iterable[ItemSpec], size: int) -> Iterator[list[ItemSpec]]:
    batch: list[ItemSpec] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _fetch(conn: sqlite3.Connection, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, tuple(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class Ledger:
    """One ledger file. Open with Ledger.open(); every method is thread-safe (one connection behind a lock).

    Writes are short IMMEDIATE transactions; each item transition updates the item, the data that justifies it
    and an events row in one transaction. A run (start_run .. finish_run) holds an exclusive OS lock on
    '<ledger>.lock'; read-only use (status, report) needs no run and no lock.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, clock: Callable[[], datetime]) -> None:
        self.path = path
        self._conn = conn
        self._db = Database(conn, execute_plugins=False)
        self._clock = clock
        self._lock = threading.RLock()
        self._run_lock = RunLock(path)
        self._run_id: str | None = None
        self._closed = False

    # ------------------------------------------------------------------ opening and closing

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: bool = True,
        busy_timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
    ) -> Ledger:
        """Open (or create, mode 0600) a ledger file: WAL journal, busy timeout, schema checked and versioned.

        Raises LedgerError when the file is missing (create=False), is not SQLite, is corrupt or belongs to
        another application; LedgerBusyError when another process holds a write lock beyond busy_timeout.
        """
        path = Path(path).expanduser()
        if path.is_dir():
            raise LedgerError(f"ledger {path} is a directory, not a ledger file")
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
        secure(path)
        try:
            conn = sqlite3.connect(
                str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {path}: {exc}") from None
        ledger = cls(path, conn, clock or _utcnow)
        try:
            ledger._prepare(busy_timeout, create)
        except BaseException:
            conn.close()
            raise
        return ledger

    def _prepare(self, busy_timeout: float, create: bool) -> None:
        conn = self._conn
        with self._guard():
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise LedgerError(f"ledger {self.path}: cannot switch to WAL journal (mode {mode})")
            # FULL: a committed intent survives a power cut, not only a crash (the duplicate rule needs it).
            conn.execute("PRAGMA synchronous = FULL")
            if not schema.user_tables(conn):
                if not create:
                    raise LedgerError(f"ledger {self.path} is not a valid videoferry ledger: it is empty")
                with self._transaction():
                    if not schema.user_tables(conn):
                        schema.create(conn, self._now())
            problem = schema.problem(conn)
            if problem:
                raise LedgerError(f"ledger {self.path} is not a valid videoferry ledger: {problem}")
            if schema.stored_version(conn) != schema.SCHEMA_VERSION:
                with self._transaction():
                    schema.upgrade(conn)
            check = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if check != "ok":
                check = " ".join(str(check).replace("***", "").split())[:200]
                raise LedgerError(
                    f"ledger {self.path} is not a valid videoferry ledger: integrity check: {check}"
                )
        secure(self.path)

    def close(self) -> None:
        """Release the run lock (if held) and close the file."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._run_lock.release()
            self._run_id = None
            self._conn.close()
        secure(self.path)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # ------------------------------------------------------------------ plumbing

    def _now(self) -> str:
        return format_time(self._clock())

    @contextmanager
    def _guard(self) -> Iterator[None]:
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
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction (BEGIN IMMEDIATE .. COMMIT), rolled back whole on any exception."""
        with self._lock:
            self._check_open()
            with self._guard(), self._transaction() as conn:
                yield conn

    @contextmanager
    def _read(self) -> Iterator[Database]:
        with self._lock:
            self._check_open()
            with self._guard():
                yield self._db

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError(f"ledger {self.path} is closed")

    def _item_row(self, conn: sqlite3.Connection, key: str) -> dict[str, Any]:
        rows = _fetch(conn, "SELECT * FROM items WHERE key = ?", (key,))
        if not rows:
            raise UnknownItem(key)
        return rows[0]

    def _event(
        self,
        conn: sqlite3.Connection,
        *,
        kind: str,
        run_id: str | None,
        key: str | None,
        from_state: str | None = None,
        to_state: str | None = None,
        op_id: int | None = None,
        error_code: str | None = None,
        request_id: str | None = None,
        message: str | None = None,
        time: str | None = None,
    ) -> None:
        conn.execute(
            "INSERT INTO events (time, run_id, kind, key, op_id, from_state, to_state, error_code,"
            " request_id, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                time or self._now(),
                run_id,
                kind,
                key,
                op_id,
                from_state,
                to_state,
                error_code,
                request_id,
                message,
            ),
        )

    def _apply(
        self,
        conn: sqlite3.Connection,
        row: dict[str, Any],
        to_state: str,
        run_id: str | None,
        *,
        values: Mapping[str, Any] | None = None,
        allowed_from: Collection[str] | None = None,
        error_code: str | None = None,
        request_id: str | None = None,
        message: str | None = None,
        event: bool = True,
    ) -> None:
        """Move one item (its current row) to to_state with values; journal it in the same transaction."""
        key, from_state = row["key"], row["state"]
        if allowed_from is not None and from_state not in allowed_from:
            raise InvalidTransition(
                key, from_state, to_state, f"this step starts from {', '.join(allowed_from)}"
            )
        check_transition(key, from_state, to_state)
        now = self._now()
        changes: dict[str, Any] = {"state": to_state, "updated_at": now}
        if run_id is not None:
            changes["last_run"] = run_id
        if to_state == DONE and from_state != DONE:
            changes["done_at"] = now
        if to_state == FINISHED:
            changes["finished_at"] = now
        if to_state not in _KEEPS_ENDPOINT:
            changes["upload_endpoint"] = None
        changes.update(values or {})
        if "meta_pending" not in changes:
            changes["meta_pending"] = _meta_pending({**row, **changes}) if to_state != FINISHED else 0
        secrets = (row.get("upload_endpoint"), changes.get("upload_endpoint"))
        for field in ("error_message",):
            if changes.get(field):
                changes[field] = scrub(changes[field], secrets, "<upload endpoint>")
        columns = ", ".join(f'"{c}" = ?' for c in changes)
        conn.execute(f"UPDATE items SET {columns} WHERE key = ?", (*changes.values(), key))
        if event:
            self._event(
                conn,
                kind="transition",
                run_id=run_id,
                key=key,
                from_state=from_state,
                to_state=to_state,
                error_code=error_code,
                request_id=request_id,
                message=scrub(message, secrets, "<upload endpoint>") if message else None,
                time=now,
            )

    # ------------------------------------------------------------------ runs

    def start_run(self, command: str, params: Mapping[str, Any] | None = None) -> str:
        """Start a run: take the exclusive run lock (LedgerBusyError if another run holds it), record it.

        Runs left 'running' by a process that died are marked 'interrupted' (the lock proves they are gone).
        Keys of params that look secret (token, password, secret, endpoint, ...) are dropped.
        """
        with self._lock:
            self._check_open()
            if self._run_id is not None:
                raise LedgerError(f"ledger {self.path}: run {self._run_id} is still active in this process")
            self._run_lock.acquire(self._holder())
            try:
                now_dt = self._clock()
                run_id = f"{now_dt.astimezone(UTC):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"
                with self._write() as conn:
                    now = self._now()
                    for stale in _fetch(conn, "SELECT run_id FROM runs WHERE status = 'running'"):
                        conn.execute(
                            "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE run_id = ?",
                            (now, stale["run_id"]),
                        )
                        self._event(
                            conn,
                            kind="run",
                            run_id=stale["run_id"],
                            key=None,
                            from_state="running",
                            to_state="interrupted",
                            message=f"found still running when run {run_id} started",
                            time=now,
                        )
                    conn.execute(
                        "INSERT INTO runs (run_id, command, params, status, pid, host, started_at)"
                        " VALUES (?, ?, ?, 'running', ?, ?, ?)",
                        (
                            run_id,
                            command,
                            dump(sanitize(dict(params or {}))),
                            os.getpid(),
                            socket.gethostname(),
                            now,
                        ),
                    )
                    self._event(
                        conn,
                        kind="run",
                        run_id=run_id,
                        key=None,
                        to_state="running",
                        message=command,
                        time=now,
                    )
            except BaseException:
                self._run_lock.release()
                raise
            self._run_id = run_id
            return run_id

    def _holder(self) -> str:
        try:
            with self._read() as db:
                running = list(
                    db.query(
                        "SELECT run_id, pid, started_at FROM runs WHERE status = 'running'"
                        " ORDER BY started_at"
                    )
                )
        except LedgerError:
            return ""
        if not running:
            return ""
        last = running[-1]
        return f" (run {last['run_id']}, pid {last['pid']}, started {last['started_at']})"

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any] | None = None) -> None:
        """Close a running run with a final status (e.g. succeeded, failed, partial) and its summary."""
        if not status or status == "running":
            raise ValueError("a finished run needs a final status other than 'running'")
        with self._lock:
            with self._write() as conn:
                now = self._now()
                cursor = conn.execute(
                    "UPDATE runs SET status = ?, finished_at = ?, summary = ?"
                    " WHERE run_id = ? AND status = 'running'",
                    (status, now, dump(sanitize(dict(summary or {}))), run_id),
                )
                if cursor.rowcount != 1:
                    raise LedgerError(f"ledger {self.path}: run {run_id} is not running")
                self._event(
                    conn, kind="run", run_id=run_id, key=None, from_state="running", to_state=status, time=now
                )
            if run_id == self._run_id:
                self._run_id = None
                self._run_lock.release()

    @property
    def run_id(self) -> str | None:
        """The run this object started and has not finished (None when none)."""
        return self._run_id

    def get_run(self, run_id: str) -> Run | None:
        """One run, or None."""
        with self._read() as db:
            return queries.get_run(db, run_id)

    def runs(self, status: str | None = None) -> list[Run]:
        """All runs, oldest first (optionally with this status)."""
        with self._read() as db:
            return queries.runs(db, status)

    # ------------------------------------------------------------------ planning

    def plan(self, specs: Iterable[ItemSpec], run_id: str | None) -> PlanResult:
        """Upsert item specs by key in one transaction (all or nothing; specs are consumed inside it).

        New keys -> planned. Items in done/finished are untouched. Items with no video yet (planned, or failed
        before any video existed) take every changed field. Items whose video may exist take metadata changes
        only (ItemSpec.METADATA_FIELDS); a changed source / parent_id / via (IDENTITY_FIELDS) is not applied
        and reported in conflicts. A key seen twice keeps its first spec (reported in duplicates). Specs are
        stored as they are: the inventory reader validated them.
        """
        added = updated = unchanged = already_done = 0
        conflicts: list[str] = []
        duplicates: list[str] = []
        seen: set[str] = set()
        wanted = ("key", "row", "state", "video_id", "create_title", "create_description", "last_run")
        fields = ", ".join((*wanted, *SPEC_COLUMNS))
        with self._write() as conn:
            now = self._now()
            for batch in _batched(specs, _PLAN_CHUNK):
                fresh: list[dict[str, Any]] = []
                for spec in batch:
                    if spec.key in seen:
                        duplicates.append(spec.key)
                        continue
                    seen.add(spec.key)
                    fresh.append(spec_columns(spec))
                if not fresh:
                    continue
                marks = ", ".join("?" * len(fresh))
                existing = {
                    r["key"]: r
                    for r in _fetch(
                        conn, f"SELECT {fields} FROM items WHERE key IN ({marks})", [i["key"] for i in fresh]
                    )
                }
                inserts: list[tuple[Any, ...]] = []
                births: list[tuple[Any, ...]] = []
                touches: list[tuple[Any, ...]] = []
                for item in fresh:
                    old = existing.get(item["key"])
                    if old is None:
                        pending = _meta_pending({**item, "create_title": None, "create_description": None})
                        inserts.append(
                            (*(item[f] for f in ("key", "row", *SPEC_COLUMNS)), pending, run_id, run_id, now)
                        )
                        births.append(
                            (
                                now,
                                run_id,
                                "transition",
                                item["key"],
                                None,
                                PLANNED,
                                f"planned from row {item['row']}",
                            )
                        )
                        added += 1
                        continue
                    if old["state"] in COMPLETE_STATES:
                        already_done += 1
                        continue
                    free = old["state"] == PLANNED or (old["state"] == FAILED and old["video_id"] is None)
                    stored = spec_columns(spec_from_row(old))  # older ledgers: NULL title / via as read
                    identity = [f for f in ItemSpec.IDENTITY_FIELDS if item[f] != stored[f]]
                    metadata = [f for f in ItemSpec.METADATA_FIELDS if item[f] != stored[f]]
                    if "source" in identity and _same_but_signature(item["source"], old["source"]):
                        identity.remove("source")  # a URL signed again (new query string): same object
                        metadata.append("source")
                    conflict = bool(identity) and not free
                    apply = identity + metadata if free else metadata
                    if conflict:
                        conflicts.append(item["key"])
                        self._event(
                            conn,
                            kind="plan",
                            run_id=run_id,
                            key=item["key"],
                            from_state=old["state"],
                            to_state=old["state"],
                            message=f"not applied: {', '.join(identity)} changed while a video may exist",
                            time=now,
                        )
                    if apply:
                        changes = {f: item[f] for f in apply}
                        changes["meta_pending"] = _meta_pending({**old, **changes})
                        changes.update(row=item["row"], last_run=run_id, updated_at=now)
                        columns = ", ".join(f'"{c}" = ?' for c in changes)
                        conn.execute(
                            f"UPDATE items SET {columns} WHERE key = ?", (*changes.values(), item["key"])
                        )
                        self._event(
                            conn,
                            kind="plan",
                            run_id=run_id,
                            key=item["key"],
                            from_state=old["state"],
                            to_state=old["state"],
                            message=f"changed: {', '.join(apply)}",
                            time=now,
                        )
                        if not conflict:
                            updated += 1
                        continue
                    if (item["row"], run_id) != (old["row"], old["last_run"]):
                        touches.append((item["row"], run_id, item["key"]))
                    if not conflict:
                        unchanged += 1
                if inserts:
                    columns = ", ".join(
                        (
                            "key",
                            "row",
                            *SPEC_COLUMNS,
                            "meta_pending",
                            "first_seen_run",
                            "last_run",
                            "updated_at",
                        )
                    )
                    conn.executemany(
                        f"INSERT INTO items ({columns}, state)"
                        f" VALUES ({', '.join('?' * (len(SPEC_COLUMNS) + 6))}, "
                        f"'{PLANNED}')",
                        inserts,
                    )
                    conn.executemany(
                        "INSERT INTO events (time, run_id, kind, key, from_state, to_state, message)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?)",
                        births,
                    )
                if touches:
                    conn.executemany("UPDATE items SET row = ?, last_run = ? WHERE key = ?", touches)
        return PlanResult(added, updated, unchanged, already_done, tuple(conflicts), tuple(duplicates))

    # ------------------------------------------------------------------ the create / upload path

    def begin_create(
        self,
        key: str,
        run_id: str | None,
        create_title: str,
        *,
        create_description: str | None = None,
        source_version: str | None = None,
    ) -> None:
        """Record the create intent (planned -> creating) before the non-idempotent create call.

        create_title is the title actually sent (maybe a placeholder); create_description the description
        actually sent (None when none travelled); source_version the source's size and mtime / ETag, so a
        source changed before a resumed upload is noticed. Stamps created_intent_at; counts an attempt.
        """
        with self._write() as conn:
            row = self._item_row(conn, key)
            self._apply(
                conn,
                row,
                CREATING,
                run_id,
                allowed_from={PLANNED},
                values={
                    "create_title": create_title,
                    "create_description": create_description,
                    "created_intent_at": self._now(),
                    "source_version": source_version,
                    "attempts": (row["attempts"] or 0) + 1,
                    **_CLEAR_ERROR,
                },
                message="create intent",
            )

    def create_started_upload(
        self,
        key: str,
        run_id: str | None,
        video_id: str | None,
        endpoint: str,
        bytes_total: int,
        request_id: str | None = None,
    ) -> None:
        """Init answered (creating -> uploading): video id, endpoint (secret) and size saved with it.

        video_id is None when the service's init answer names an upload session rather than the video: the
        video is then found by listing (set_video_id) once its bytes are sent.
        """
        with self._write() as conn:
            row = self._item_row(conn, key)
            if video_id is not None:
                self._check_video_free(conn, key, video_id)
            self._apply(
                conn,
                row,
                UPLOADING,
                run_id,
                allowed_from={CREATING},
                values={
                    "video_id": video_id,
                    "upload_endpoint": endpoint,
                    "upload_offset": 0,
                    "bytes_total": bytes_total,
                    "status": "pending",
                    "request_id": request_id,
                },
                request_id=request_id,
                message=f"upload session created for video {video_id or '(id learned later by listing)'}",
            )

    def create_accepted(
        self,
        key: str,
        run_id: str | None,
        video_id: str,
        request_id: str | None = None,
        status: str | None = None,
    ) -> None:
        """A single-request or URL upload was accepted (creating -> processing) with its video id."""
        with self._write() as conn:
            row = self._item_row(conn, key)
            self._check_video_free(conn, key, video_id)
            values: dict[str, Any] = {
                "video_id": video_id,
                "status": status or "pending",
                "request_id": request_id,
            }
            if row["via"] == "single" and row["source_size"] is not None:
                values.update(bytes_total=row["source_size"], upload_offset=row["source_size"])
            self._apply(
                conn,
                row,
                PROCESSING,
                run_id,
                allowed_from={CREATING},
                values=values,
                request_id=request_id,
                message=f"upload accepted: video {video_id}",
            )

    def adopt(
        self, key: str, run_id: str | None, video_id: str, status: str, request_id: str | None = None
    ) -> str:
        """Reconcile found the item's video: creating -> the state its status implies; returns that state.

        For a tus item whose video still waits for bytes (pending/uploading) the state is uploading with no
        endpoint (the init answer was lost): the flow must re-send the file (e.g. X-Replace-Video-ID) or
        restart() after deleting the video.
        """
        with self._write() as conn:
            row = self._item_row(conn, key)
            self._check_video_free(conn, key, video_id)
            target = state_for_status(status, CREATING, row["via"])
            values: dict[str, Any] = {"video_id": video_id, "status": status, "request_id": request_id}
            if row["source_size"] is not None:
                values["bytes_total"] = row["source_size"]
            if target in (ERROR, ABORTED):
                values.update(
                    error_code=f"video_{target}",
                    error_message=f"the adopted video {video_id} was already in status {status}",
                )
            self._apply(
                conn,
                row,
                target,
                run_id,
                allowed_from={CREATING},
                values=values,
                error_code=values.get("error_code"),
                request_id=request_id,
                message=f"reconcile: adopted existing video {video_id} (status {status})",
            )
            return target

    def reconcile_none(self, key: str, run_id: str | None, message: str | None = None) -> None:
        """Reconcile found no video for a creating item: back to planned, safe to create again."""
        with self._write() as conn:
            row = self._item_row(conn, key)
            self._apply(
                conn,
                row,
                PLANNED,
                run_id,
                allowed_from={CREATING},
                values={"created_intent_at": None},
                message="reconcile: no matching video; safe to create again"
                + (f" ({message})" if message else ""),
            )

    def set_video_id(self, key: str, run_id: str | None, video_id: str) -> None:
        """Record the video of an item whose create answer named only an upload session (found by listing)."""
        with self._write() as conn:
            row = self._item_row(conn, key)
            if row["video_id"] == video_id:
                return
            if row["video_id"] is not None:
                raise LedgerError(f"item {key!r} already has video {row['video_id']}, not {video_id}")
            self._check_video_free(conn, key, video_id)
            conn.execute(
                "UPDATE items SET video_id = ?, updated_at = ? WHERE key = ?", (video_id, self._now(), key)
            )
            self._event(
                conn,
                kind="note",
                run_id=run_id,
                key=key,
                from_state=row["state"],
                to_state=row["state"],
                message=f"video {video_id} found by listing",
                time=self._now(),
            )

    def _check_video_free(self, conn: sqlite3.Connection, key: str, video_id: str) -> None:
        other = _fetch(conn, "SELECT key FROM items WHERE video_id = ? AND key != ?", (video_id, key))
        if other:
            raise LedgerError(f"video {video_id} already belongs to item {other[0]['key']!r}, not {key!r}")

    def record_offset(self, key: str, offset: int, *, allow_decrease: bool = False) -> int:
        """Save the acknowledged upload offset (no event); never lowered unless allow_decrease; returns it."""
        if offset < 0:
            raise ValueError("an upload offset cannot be negative")
        with self._write() as conn:
            rows = _fetch(conn, "SELECT state, upload_offset, bytes_total FROM items WHERE key = ?", (key,))
            if not rows:
                raise UnknownItem(key)
            row = rows[0]
            if row["state"] != UPLOADING:
                raise InvalidTransition(
                    key, row["state"], UPLOADING, "offsets are recorded only while uploading"
                )
            if row["bytes_total"] is not None and offset > row["bytes_total"]:
                raise ValueError(f"offset {offset} is beyond the upload size {row['bytes_total']}")
            new = offset if allow_decrease else max(offset, row["upload_offset"] or 0)
            if new != row["upload_offset"]:
                conn.execute(
                    "UPDATE items SET upload_offset = ?, updated_at = ? WHERE key = ?",
                    (new, self._now(), key),
                )
            return new

    def upload_complete(self, key: str, run_id: str | None, request_id: str | None = None) -> None:
        """Every byte is acknowledged (uploading -> uploaded); the endpoint is forgotten."""
        with self._write() as conn:
            row = self._item_row(conn, key)
            total = row["bytes_total"] if row["bytes_total"] is not None else row["upload_offset"]
            self._apply(
                conn,
                row,
                UPLOADED,
                run_id,
                allowed_from={UPLOADING},
                values={"upload_offset": total, "bytes_total": total},
                request_id=request_id,
                message="upload complete",
            )

    # ------------------------------------------------------------------ service status

    def _status(
        self,
        conn: sqlite3.Connection,
        row: dict[str, Any],
        run_id: str | None,
        status: str,
        message: str | None,
    ) -> str:
        current = row["state"]
        target = state_for_status(status, current, row["via"])
        if target == current and (status == row["status"] or current in COMPLETE_STATES):
            return current
        values: dict[str, Any] = {"status": status}
        error_code = None
        if target in (ERROR, ABORTED):
            error_code = f"video_{target}"
            values.update(error_code=error_code, error_message=message)
        self._apply(
            conn,
            row,
            target,
            run_id,
            values=values,
            allowed_from=_STATUS_FROM,
            error_code=error_code,
            message=f"status {status}" + (f": {message}" if message else ""),
        )
        return target

    def set_status(self, key: str, run_id: str | None, status: str, message: str | None = None) -> str:
        """Record the service's video status; move the item as it implies; returns the new state.

        pending/uploading/pre-processing/processing -> processing (uploading stays uploading while our upload
        runs), done -> done, error -> error, aborted -> aborted. No event when nothing changed.
        """
        with self._write() as conn:
            return self._status(conn, self._item_row(conn, key), run_id, status, message)

    def apply_statuses(
        self, run_id: str | None, statuses: Mapping[str, str], messages: Mapping[str, str] | None = None
    ) -> list[tuple[str, str, str]]:
        """Batch set_status from one listing page: {video_id: status}; one transaction.

        Only items being watched (uploading, uploaded, processing) are touched; unknown video ids are ignored.
        Returns (key, from_state, to_state) for every item whose state changed.
        """
        changed: list[tuple[str, str, str]] = []
        ids = list(statuses)
        with self._write() as conn:
            for start in range(0, len(ids), _PLAN_CHUNK):
                chunk = ids[start : start + _PLAN_CHUNK]
                marks = ", ".join("?" * len(chunk))
                watched = ", ".join(f"'{s}'" for s in sorted(WATCHED_STATES))
                rows = _fetch(
                    conn, f"SELECT * FROM items WHERE video_id IN ({marks}) AND state IN ({watched})", chunk
                )
                for row in rows:
                    video_id = row["video_id"]
                    new = self._status(conn, row, run_id, statuses[video_id], (messages or {}).get(video_id))
                    if new != row["state"]:
                        changed.append((row["key"], row["state"], new))
        return changed

    # ------------------------------------------------------------------ failures, finishing, requeue

    def fail(
        self,
        key: str,
        run_id: str | None,
        error_code: str | int,
        message: str,
        request_id: str | None = None,
    ) -> None:
        """Our-side or non-retryable failure -> failed (remembering where, so requeue can resume there).

        A failed item always carries a message: an empty one is replaced by one naming the code.
        """
        with self._write() as conn:
            row = self._item_row(conn, key)
            code = str(error_code)
            message = message.strip() or f"failed with code {code} (no further detail was given)"
            self._apply(
                conn,
                row,
                FAILED,
                run_id,
                values={
                    "failed_from": row["state"],
                    "error_code": code,
                    "error_message": message,
                    "request_id": request_id,
                },
                error_code=code,
                request_id=request_id,
                message=message,
            )

    def finished(self, key: str, run_id: str | None) -> None:
        """The finish step is complete (done -> finished); nothing is owed any more."""
        with self._write() as conn:
            row = self._item_row(conn, key)
            self._apply(
                conn,
                row,
                FINISHED,
                run_id,
                allowed_from={DONE},
                values={"meta_pending": 0},
                message="finished",
            )

    def restart(self, key: str, run_id: str | None, message: str) -> None:
        """Forget an item's video and go back to planned, to create it again.

        Only for a video the flow has deleted, that vanished (404), or whose processing failed
        (error/aborted); the old video id is kept in the journal. Never from creating: reconcile that first.
        """
        with self._write() as conn:
            row = self._item_row(conn, key)
            self._restart(conn, row, run_id, message)

    def _restart(
        self, conn: sqlite3.Connection, row: dict[str, Any], run_id: str | None, message: str
    ) -> None:
        note = f"restart: {message}"
        if row["video_id"]:
            note += f" (previous video {row['video_id']})"
        self._apply(
            conn,
            row,
            PLANNED,
            run_id,
            allowed_from={UPLOADING, UPLOADED, PROCESSING, FAILED, ERROR, ABORTED},
            values=dict(_VIDEO_RESET),
            message=note,
        )

    def requeue_failed(
        self, run_id: str | None, *, keys: Collection[str] | None = None, include_service_errors: bool = False
    ) -> dict[str, int]:
        """Put failed items back where they can resume; returns {target state: count}.

        No video yet -> planned. A video exists -> the state the item failed from (uploading resumes with HEAD
        at the saved endpoint; uploaded/processing are watched again; done is finished again); a video in an
        unknown state -> processing. With include_service_errors, items in error/aborted are restarted (a new
        video is created; the old id stays in the journal).
        """
        states = [FAILED, *([ERROR, ABORTED] if include_service_errors else [])]
        targets: dict[str, int] = {}
        with self._write() as conn:
            marks = ", ".join("?" * len(states))
            rows = _fetch(conn, f"SELECT * FROM items WHERE state IN ({marks}) ORDER BY key", states)
            wanted = set(keys) if keys is not None else None
            for row in rows:
                if wanted is not None and row["key"] not in wanted:
                    continue
                if row["state"] in (ERROR, ABORTED):
                    self._restart(conn, row, run_id, f"requeued after the service reported {row['state']}")
                    target = PLANNED
                elif row["video_id"] is None:
                    target = PLANNED
                    self._apply(
                        conn, row, target, run_id, values=dict(_VIDEO_RESET), message="requeued: no video yet"
                    )
                else:
                    origin = row["failed_from"]
                    target = origin if origin in (UPLOADING, UPLOADED, PROCESSING, DONE) else PROCESSING
                    self._apply(
                        conn,
                        row,
                        target,
                        run_id,
                        values={**_CLEAR_ERROR, "attempts": (row["attempts"] or 0) + 1},
                        message=f"requeued: resume at {target}",
                    )
                targets[target] = targets.get(target, 0) + 1
        return targets

    def note(
        self,
        key: str | None,
        run_id: str | None,
        message: str,
        *,
        kind: str = "note",
        error_code: str | int | None = None,
        request_id: str | None = None,
    ) -> None:
        """Journal something that is not a transition: kind 'note', or 'retry' (counted in the summary)."""
        if kind not in ("note", "retry"):
            raise ValueError("kind must be 'note' or 'retry'")
        with self._write() as conn:
            secret = None
            if key is not None:
                rows = _fetch(conn, "SELECT state, upload_endpoint FROM items WHERE key = ?", (key,))
                state = rows[0]["state"] if rows else None
                secret = rows[0]["upload_endpoint"] if rows else None
            else:
                state = None
            self._event(
                conn,
                kind=kind,
                run_id=run_id,
                key=key,
                from_state=state,
                to_state=state,
                error_code=None if error_code is None else str(error_code),
                request_id=request_id,
                message=scrub(message, (secret,)),
            )

    # ------------------------------------------------------------------ operations (edits, finish steps)

    def record_op_intent(
        self,
        item_key: str | None,
        kind: str,
        params: Mapping[str, Any],
        *,
        run_id: str | None = None,
        video_id: str | None = None,
        op_key: str | None = None,
        before: Mapping[str, Any] | None = None,
    ) -> int:
        """Record an operation's intent before its call; returns op_id.

        kind: chapters, update, copy, concat, cut, move, delete, replace. cut/replace need `before` (the
        video's version, updated_at, duration) so an unknown outcome can be checked without repeating it.
        With op_key, a previous call of the same op_key whose outcome is unknown must be resolved first.
        """
        if kind not in OP_KINDS:
            raise ValueError(f"unknown operation kind {kind!r}")
        if kind in OP_IN_PLACE and not before:
            raise ValueError(f"a {kind} intent needs the video's version/updated_at/duration (before=)")
        with self._write() as conn:
            if op_key is not None:
                open_ops = _fetch(
                    conn, "SELECT op_id FROM ops WHERE op_key = ? AND status = ?", (op_key, OP_INTENT)
                )
                if open_ops:
                    raise InvalidTransition(
                        f"op {op_key}",
                        OP_INTENT,
                        OP_INTENT,
                        f"op {open_ops[0]['op_id']} has an unknown outcome: reconcile it first",
                    )
            now = self._now()
            cursor = conn.execute(
                "INSERT INTO ops (op_key, item_key, video_id, kind, params, before, status, run_id,"
                " intent_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    op_key,
                    item_key,
                    video_id,
                    kind,
                    dump(sanitize(dict(params))),
                    dump(dict(before)) if before else None,
                    OP_INTENT,
                    run_id,
                    now,
                ),
            )
            op_id = int(cursor.lastrowid or 0)
            self._event(
                conn,
                kind="op",
                run_id=run_id,
                key=item_key,
                op_id=op_id,
                to_state=OP_INTENT,
                message=f"{kind} intent" + (f" on video {video_id}" if video_id else ""),
                time=now,
            )
            return op_id

    def record_op_outcome(
        self,
        op_id: int,
        status: str,
        result: Any = None,
        *,
        error_code: str | int | None = None,
        error_message: str | None = None,
        request_id: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """Record an operation's outcome right after its call (done / failed / void: did not take effect)."""
        with self._write() as conn:
            rows = _fetch(conn, "SELECT * FROM ops WHERE op_id = ?", (op_id,))
            if not rows:
                raise LedgerError(f"operation {op_id} is not in the ledger")
            row = rows[0]
            check_op_transition(op_id, row["status"], status)
            now = self._now()
            code = None if error_code is None else str(error_code)
            message = scrub(error_message, ()) if error_message else None
            conn.execute(
                "UPDATE ops SET status = ?, result = ?, error_code = ?, error_message = ?, request_id = ?,"
                " outcome_at = ? WHERE op_id = ?",
                (status, None if result is None else dump(result), code, message, request_id, now, op_id),
            )
            self._event(
                conn,
                kind="op",
                run_id=run_id or row["run_id"],
                key=row["item_key"],
                op_id=op_id,
                from_state=row["status"],
                to_state=status,
                error_code=code,
                request_id=request_id,
                message=f"{row['kind']} {status}" + (f": {message}" if message else ""),
                time=now,
            )

    def get_op(self, op_id: int) -> Op | None:
        """One operation, or None."""
        with self._read() as db:
            return queries.get_op(db, op_id)

    def ops(
        self,
        *,
        item_key: str | None = None,
        op_key: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        run_id: str | None = None,
    ) -> list[Op]:
        """Operations matching every given filter, oldest first."""
        with self._read() as db:
            return queries.ops(db, item_key=item_key, op_key=op_key, status=status, kind=kind, run_id=run_id)

    def pending_ops(self) -> list[Op]:
        """Operations whose outcome is unknown (intent written, no outcome): reconcile before repeating."""
        return self.ops(status=OP_INTENT)

    # ------------------------------------------------------------------ reading

    def get(self, key: str) -> Item | None:
        """The item with this key, or None."""
        with self._read() as db:
            return queries.get_item(db, key)

    def items(self, states: Collection[str] | None = None, limit: int | None = None) -> list[Item]:
        """Items, optionally only in states, in inventory order."""
        with self._read() as db:
            return queries.items(db, states, limit)

    def pending_keys(self, states: Collection[str], limit: int | None = None) -> list[str]:
        """Keys of the items in states, in inventory order."""
        with self._read() as db:
            return queries.pending_keys(db, states, limit)

    def creating_items(self) -> list[Item]:
        """Items whose create outcome is unknown: the flow reconciles each before any new create."""
        with self._read() as db:
            return queries.creating_items(db)

    def title_rows(self) -> list[tuple[str, str | None, str | None, str]]:
        """(key, parent_id, title, source) of every item (the caller derives titles and finds shared ones)."""
        with self._read() as db:
            return queries.title_rows(db)

    def keys_for_videos(self, video_ids: Iterable[str]) -> dict[str, str]:
        """video_id -> key for ids already owned by an item (reconcile must not adopt those)."""
        with self._read() as db:
            return queries.keys_for_videos(db, video_ids)

    def counts(self) -> dict[str, int]:
        """Items per state, every state listed."""
        with self._read() as db:
            return queries.counts(db)

    def summary(self, run_id: str | None = None) -> dict[str, Any]:
        """Counts, bytes, error codes, attempts/retries, first/last times, throughput (queries.summary)."""
        with self._read() as db:
            return queries.summary(db, run_id)

    def report_rows(self, states: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The per-item report table; never includes the upload endpoint."""
        with self._read() as db:
            return queries.report_rows(db, states)

    def events(
        self, key: str | None = None, limit: int | None = None, run_id: str | None = None
    ) -> list[Event]:
        """Journal rows, oldest first (with limit: the latest limit rows)."""
        with self._read() as db:
            return queries.events(db, key=key, run_id=run_id, limit=limit)
