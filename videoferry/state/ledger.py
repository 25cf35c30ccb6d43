"""The Ledger: the thread-safe front of the ledger file; each method is one transaction in one module."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from videoferry.core.item import ItemSpec
from videoferry.state import applied, operations, outcomes, planning, runs
from videoferry.state import items as item_steps
from videoferry.state.applied import UnitPlan
from videoferry.state.batch import LedgerBatches
from videoferry.state.db import LedgerDB, utcnow
from videoferry.state.errors import LedgerError
from videoferry.state.files import RunLock
from videoferry.state.machine import RunStatus
from videoferry.state.models import PlanResult
from videoferry.state.reader import LedgerReader


class Ledger(LedgerReader, LedgerBatches):
    """One ledger file. Open with Ledger.open(); every method is thread-safe (one connection behind a lock).

    Writes are short IMMEDIATE transactions; each item transition writes the item, the data that justifies it
    and its journal row in one transaction (state.journal). A run (start_run .. finish_run) holds an exclusive
    OS lock on '<ledger>.lock'; read-only use (status, report) needs no run and no lock. Batch forms of the
    steps (state.batch) move many items by one step in one transaction.
    """

    def __init__(self, db: LedgerDB) -> None:
        self.path = db.path
        self._db = db
        self._run_lock = RunLock(db.path)
        self._run_id: str | None = None

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
        return cls(LedgerDB.open(path, create=create, busy_timeout=busy_timeout, clock=clock or utcnow))

    def guard_intents(self, guard: Callable[[], None] | None) -> None:
        """Call guard() before every intent is written (begin_create(s), record_op_intent, unit_intent); an
        exception it raises refuses the intent, so the call is not made (a remote ledger's lost lock)."""
        self._db.intent_guard = guard

    def close(self) -> None:
        """Release the run lock (if held) and close the file."""
        with self._db.lock:
            if self._db.closed:
                return
            self._run_lock.release()
            self._run_id = None
            self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # ------------------------------------------------------------------ runs

    def start_run(self, command: str, params: Mapping[str, Any] | None = None) -> str:
        """Start a run: take the exclusive run lock (LedgerBusyError if another run holds it), record it.

        Runs left 'running' by a process that died are marked 'interrupted' (the lock proves they are gone).
        Keys of params that look secret (token, password, secret, endpoint, ...) are dropped.
        """
        with self._db.lock:
            self._db.check_open()
            if self._run_id is not None:
                raise LedgerError(f"ledger {self.path}: run {self._run_id} is still active in this process")
            self._run_lock.acquire(self._holder())
            try:
                run_id = runs.new_run_id(self._db.clock())
                with self._db.write() as conn:
                    runs.start(conn, self._db.now(), run_id, command, params)
            except BaseException:
                self._run_lock.release()
                raise
            self._run_id = run_id
            return run_id

    def _holder(self) -> str:
        try:
            with self._db.read() as db:
                return runs.holder(db)
        except LedgerError:
            return ""

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any] | None = None) -> None:
        """Close a running run with its final status (machine.RunStatus: done, incomplete...) and summary."""
        if not status or status == RunStatus.RUNNING:
            raise ValueError("a finished run needs a final status other than 'running'")
        with self._db.lock:
            with self._db.write() as conn:
                if not runs.finish(conn, self._db.now(), run_id, status, summary):
                    raise LedgerError(f"ledger {self.path}: run {run_id} is not running")
            if run_id == self._run_id:
                self._run_id = None
                self._run_lock.release()

    def keep_setting(self, key: str, value: str) -> None:
        """Keep value under key for later runs (read back with setting(); e.g. tasks/gap_mark.py's mark)."""
        with self._db.write() as conn:
            runs.keep_setting(conn, key, value)

    @property
    def run_id(self) -> str | None:
        """The run this object started and has not finished (None when none)."""
        return self._run_id

    # ------------------------------------------------------------------ planning

    def plan(self, specs: Iterable[ItemSpec], run_id: str | None) -> PlanResult:
        """Upsert item specs by key in one transaction (all or nothing; specs are consumed inside it).

        New keys -> planned. Items in done/finished are untouched. Items with no video yet (planned, or failed
        before any video existed) take every changed field. Items whose video may exist take metadata changes
        only (ItemSpec.METADATA_FIELDS); a changed source / parent_id / via (IDENTITY_FIELDS) is not applied
        and reported in conflicts. A key seen twice keeps its first spec (reported in duplicates). Specs are
        stored as they are: the inventory reader validated them.
        """
        with self._db.write() as conn:
            return planning.plan(conn, self._db.now(), specs, run_id)

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
        self._db.guard_intent()
        with self._db.write() as conn:
            now = self._db.now()
            item_steps.begin_create(conn, now, key, run_id, create_title, create_description, source_version)

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
        with self._db.write() as conn:
            now = self._db.now()
            item_steps.create_started_upload(
                conn, now, key, run_id, video_id, endpoint, bytes_total, request_id
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
        with self._db.write() as conn:
            item_steps.create_accepted(conn, self._db.now(), key, run_id, video_id, request_id, status)

    def adopt(
        self, key: str, run_id: str | None, video_id: str, status: str, request_id: str | None = None
    ) -> str:
        """Reconcile found the item's video: creating -> the state its status implies; returns that state.

        For a tus item whose video still waits for bytes (pending/uploading) the state is uploading with no
        endpoint (the init answer was lost): the flow must re-send the file (e.g. X-Replace-Video-ID) or
        restart() after deleting the video.
        """
        with self._db.write() as conn:
            return item_steps.adopt(conn, self._db.now(), key, run_id, video_id, status, request_id)

    def reconcile_none(self, key: str, run_id: str | None, message: str | None = None) -> None:
        """Reconcile found no video for a creating item: back to planned, safe to create again."""
        with self._db.write() as conn:
            item_steps.reconcile_none(conn, self._db.now(), key, run_id, message)

    def set_video_id(
        self, key: str, run_id: str | None, video_id: str, how: str = "found by listing"
    ) -> None:
        """Record the video of an item whose create answer was recorded without it: found by listing (the
        answer named an upload session), or `how` else (the run's probe said init answers name videos)."""
        with self._db.write() as conn:
            item_steps.set_video_id(conn, self._db.now(), key, run_id, video_id, how)

    def new_upload_address(self, key: str, run_id: str | None, endpoint: str, bytes_total: int) -> None:
        """An uploading item's video got a new upload session (its address lost): endpoint saved, offset 0."""
        with self._db.write() as conn:
            item_steps.new_upload_address(conn, self._db.now(), key, run_id, endpoint, bytes_total)

    def record_offset(self, key: str, offset: int, *, allow_decrease: bool = False) -> int:
        """Save the acknowledged upload offset (no event); never lowered unless allow_decrease; returns it."""
        if offset < 0:
            raise ValueError("an upload offset cannot be negative")
        with self._db.write() as conn:
            return item_steps.record_offset(conn, self._db.now(), key, offset, allow_decrease)

    def upload_complete(self, key: str, run_id: str | None, request_id: str | None = None) -> None:
        """Every byte is acknowledged (uploading -> uploaded); the endpoint is forgotten."""
        with self._db.write() as conn:
            item_steps.upload_complete(conn, self._db.now(), key, run_id, request_id)

    # ------------------------------------------------------------------ service status

    def set_status(self, key: str, run_id: str | None, status: str, message: str | None = None) -> str:
        """Record the service's video status; move the item as it implies; returns the new state.

        pending/uploading/pre-processing/processing -> processing (uploading stays uploading while our upload
        runs), done -> done, error -> error, aborted -> aborted. No event when nothing changed.
        """
        with self._db.write() as conn:
            row = item_steps.item_row(conn, key)
            return outcomes.record_status(conn, self._db.now(), row, run_id, status, message)

    def apply_statuses(
        self, run_id: str | None, statuses: Mapping[str, str], messages: Mapping[str, str] | None = None
    ) -> list[tuple[str, str, str]]:
        """Batch set_status from one listing page: {video_id: status}; one transaction.

        Only items being watched (uploading, uploaded, processing) are touched; unknown video ids are ignored.
        Returns (key, from_state, to_state) for every item whose state changed.
        """
        with self._db.write() as conn:
            return outcomes.apply_statuses(conn, self._db.now(), run_id, statuses, messages)

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
        with self._db.write() as conn:
            outcomes.fail(conn, self._db.now(), key, run_id, error_code, message, request_id)

    def finished(self, key: str, run_id: str | None) -> None:
        """The finish step is complete (done -> finished); nothing is owed any more."""
        with self._db.write() as conn:
            outcomes.finished(conn, self._db.now(), key, run_id)

    def restart(self, key: str, run_id: str | None, message: str) -> None:
        """Forget an item's video and go back to planned, to create it again.

        Only for a video the flow has deleted, that vanished (404), or whose processing failed
        (error/aborted); the old video id is kept in the journal. Never from creating: reconcile that first.
        """
        with self._db.write() as conn:
            outcomes.restart(conn, self._db.now(), item_steps.item_row(conn, key), run_id, message)

    def requeue_failed(
        self, run_id: str | None, *, keys: Collection[str] | None = None, include_service_errors: bool = False
    ) -> dict[str, int]:
        """Put failed items back where they can resume; returns {target state: count}.

        No video yet -> planned. A video exists -> the state the item failed from (uploading resumes with HEAD
        at the saved endpoint; uploaded/processing are watched again; done is finished again); a video in an
        unknown state -> processing. With include_service_errors, items in error/aborted are restarted (a new
        video is created; the old id stays in the journal).
        """
        with self._db.write() as conn:
            return outcomes.requeue_failed(conn, self._db.now(), run_id, keys, include_service_errors)

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
        """Journal something that is not a transition: kind 'note', 'retry' (counted in the summary) or
        'warning' (listed in the summary's `warnings`, each (key, message) once)."""
        if kind not in ("note", "retry", "warning"):
            raise ValueError("kind must be 'note', 'retry' or 'warning'")
        with self._db.write() as conn:
            outcomes.note(conn, self._db.now(), key, run_id, message, kind, error_code, request_id)

    # ------------------------------------------------------------------ operations (edits, finish steps)

    def record_op_intent(
        self,
        owner_key: str | None,
        kind: str,
        params: Mapping[str, Any],
        *,
        run_id: str | None = None,
        video_id: str | None = None,
        op_key: str | None = None,
        before: Mapping[str, Any] | None = None,
        target_kind: str | None = None,
        target_id: str | None = None,
    ) -> int:
        """Record an operation's intent before its call; returns op_id.

        kind: one of machine.OP_KINDS. The target is video_id (a video), or target_kind (machine.OBJECT_KINDS)
        and target_id. cut/replace need `before` (the video's version, updated_at, duration) so an unknown
        outcome can be checked without repeating it. With op_key, a previous call of the same op_key whose
        outcome is unknown must be resolved first.
        """
        operations.check_intent(kind, before)
        target = operations.resolve_target(video_id, target_kind, target_id)
        self._db.guard_intent()
        with self._db.write() as conn:
            now = self._db.now()
            return operations.record_intent(
                conn, now, owner_key, kind, params, run_id=run_id, target=target, op_key=op_key, before=before
            )

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
        created_id: str | None = None,
        created_kind: str | None = None,
    ) -> None:
        """Record an operation's outcome right after its call (done / failed / void: did not take effect).

        created_id names the object a done operation created (copy, concat, archive); created_kind is one of
        machine.OBJECT_KINDS, "video" when not given.
        """
        created = (operations.check_created(status, created_kind, created_id), created_id)
        with self._db.write() as conn:
            operations.record_outcome(
                conn,
                self._db.now(),
                op_id,
                status,
                result,
                error_code=error_code,
                error_message=error_message,
                request_id=request_id,
                run_id=run_id,
                created=created,
            )

    # ------------------------------------------------------------------ apply units

    def plan_units(self, plans: Iterable[UnitPlan], run_id: str | None) -> int:
        """Store the units of an operations file not yet in the ledger; returns how many were new."""
        with self._db.write() as conn:
            return applied.plan_units(conn, self._db.now(), plans, run_id)

    def move_unit(
        self,
        key: str,
        to_state: str,
        run_id: str | None,
        message: str,
        *,
        values: Mapping[str, Any] | None = None,
        error_code: str | int | None = None,
        request_id: str | None = None,
        expect: Collection[str] = (),
    ) -> str:
        """Move a unit to another state (machine.UNIT_TRANSITIONS), journalled; returns the state it left."""
        with self._db.write() as conn:
            return applied.move_unit(
                conn,
                self._db.now(),
                key,
                to_state,
                run_id,
                message=message,
                values=values,
                error_code=error_code,
                request_id=request_id,
                expect=tuple(expect),
            )

    def unit_intent(
        self,
        key: str,
        kind: str,
        params: Mapping[str, Any],
        run_id: str | None,
        *,
        video_id: str | None,
        before: Mapping[str, Any] | None = None,
    ) -> int:
        """A unit's call intent: the unit is running and an op row (op_key = unit key) holds the intent."""
        operations.check_intent(kind, before)
        target = operations.resolve_target(video_id, None, None)
        self._db.guard_intent()
        with self._db.write() as conn:
            now = self._db.now()
            state = applied.unit_state(conn, key)
            if state != "running":
                applied.move_unit(conn, now, key, "running", run_id, message=f"{kind} intent")
            applied.bump_attempts(conn, key, video_id)
            return operations.record_intent(
                conn, now, None, kind, params, run_id=run_id, target=target, op_key=key, before=before
            )
