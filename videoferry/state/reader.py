"""LedgerReader: the Ledger's read-only methods, each one query of state/queries.py under the file's lock."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from videoferry.state import activity, applied, queries, runs
from videoferry.state.applied import Unit
from videoferry.state.db import LedgerDB
from videoferry.state.machine import OpStatus
from videoferry.state.models import Event, Item, Op, Run


class LedgerReader:
    """Reads of one open ledger file; they need no run and no run lock (WAL: other processes may write)."""

    _db: LedgerDB

    def setting(self, key: str) -> str | None:
        """The value a run kept under key for later runs (Ledger.keep_setting), or None."""
        with self._db.read() as db:
            return runs.setting(db, key)

    def get(self, key: str) -> Item | None:
        """The item with this key, or None."""
        with self._db.read() as db:
            return queries.get_item(db, key)

    def items(self, states: Collection[str] | None = None, limit: int | None = None) -> list[Item]:
        """Items, optionally only in states, in inventory order."""
        with self._db.read() as db:
            return queries.items(db, states, limit)

    def pending_keys(self, states: Collection[str], limit: int | None = None) -> list[str]:
        """Keys of the items in states, in inventory order."""
        with self._db.read() as db:
            return queries.pending_keys(db, states, limit)

    def keys_in(self, states: Collection[str]) -> set[str]:
        """Keys of the items in these states, as a set (cheaper than pending_keys: no order)."""
        with self._db.read() as db:
            return queries.keys_in(db, states)

    def creating_items(self) -> list[Item]:
        """Items whose create outcome is unknown: the flow reconciles each before any new create."""
        with self._db.read() as db:
            return queries.creating_items(db)

    def title_rows(self) -> list[tuple[str, str | None, str | None, str]]:
        """(key, parent_id, title, source) of every item (the caller derives titles and finds shared ones)."""
        with self._db.read() as db:
            return queries.title_rows(db)

    def keys_for_videos(self, video_ids: Iterable[str]) -> dict[str, str]:
        """video_id -> key for ids already owned by an item (reconcile must not adopt those)."""
        with self._db.read() as db:
            return queries.keys_for_videos(db, video_ids)

    def counts(self) -> dict[str, int]:
        """Items per state, every state listed."""
        with self._db.read() as db:
            return queries.counts(db)

    def count(self, states: Collection[str], at_most: int | None = None) -> int:
        """Items in these states (a count: no row is read into Python), or at_most when more are: a caller
        that only compares the count with a bound passes it, and the index is read only that far."""
        with self._db.read() as db:
            return queries.count(db, states, at_most)

    def size(self) -> tuple[int, int]:
        """(items, bytes_total) as summary() counts them, without reading the journal (cheap at any size)."""
        with self._db.read() as db:
            return queries.size(db)

    def summary(self, run_id: str | None = None) -> dict[str, Any]:
        """Counts, bytes, error codes, attempts/retries, first/last times, throughput (queries.summary).

        What it says of the ledger now (queries.ledger_now) is kept while the file does not change (no write
        of this connection, no commit of another: LedgerDB.version), so a run's summary and the whole
        ledger's, one after the other, read the items once."""
        with self._db.read() as db:
            version = self._db.version()
            kept = self._db.kept.get("ledger_now")
            if kept is None or kept[0] != version:
                kept = (version, queries.ledger_now(db))
                self._db.kept["ledger_now"] = kept
            return queries.summary(db, run_id, kept[1])

    def report_rows(self, states: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The per-item report table; never includes the upload endpoint."""
        with self._db.read() as db:
            return queries.report_rows(db, states)

    def events(
        self, key: str | None = None, limit: int | None = None, run_id: str | None = None
    ) -> list[Event]:
        """Journal rows, oldest first (with limit: the latest limit rows)."""
        with self._db.read() as db:
            return queries.events(db, key=key, run_id=run_id, limit=limit)

    def get_run(self, run_id: str) -> Run | None:
        """One run, or None."""
        with self._db.read() as db:
            return queries.get_run(db, run_id)

    def runs(self, status: str | None = None) -> list[Run]:
        """All runs, oldest first (optionally with this status)."""
        with self._db.read() as db:
            return queries.runs(db, status)

    def get_op(self, op_id: int) -> Op | None:
        """One operation, or None."""
        with self._db.read() as db:
            return queries.get_op(db, op_id)

    def ops(
        self,
        *,
        owner_key: str | None = None,
        op_key: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        run_id: str | None = None,
        target_id: str | None = None,
        created_id: str | None = None,
    ) -> list[Op]:
        """Operations matching every given filter, oldest first."""
        filters = {"target_id": target_id, "created_id": created_id}
        with self._db.read() as db:
            return queries.ops(
                db, owner_key=owner_key, op_key=op_key, status=status, kind=kind, run_id=run_id, **filters
            )

    def pending_ops(self) -> list[Op]:
        """Operations whose outcome is unknown (intent written, no outcome): reconcile before repeating."""
        return self.ops(status=OpStatus.INTENT)

    # ------------------------------------------------------------------ apply units

    def units(self, states: Collection[str] | None = None) -> list[Unit]:
        """Apply units in the given states (all when None), in plan order."""
        with self._db.read() as db:
            return applied.units(db.conn, states)

    def units_with_cursor(self) -> tuple[list[Unit], int]:
        """Every apply unit, in plan order, and the newest journal event id (units_changed_since's start)."""
        with self._db.read() as db:
            return applied.units(db.conn, None), applied.last_event(db.conn)

    def units_changed_since(self, after: int) -> tuple[list[Unit], int]:
        """The units planned or moved after journal event `after`, as they are now, and the newest event id:
        a schedule that keeps the units reads what changed each round, not the whole table."""
        with self._db.read() as db:
            return applied.units_changed_since(db.conn, after)

    def unit_counts(self) -> dict[str, int]:
        """How many apply units are in each state."""
        counts: dict[str, int] = {}
        for unit in self.units():
            counts[unit.state] = counts.get(unit.state, 0) + 1
        return counts

    def unit(self, key: str) -> Unit | None:
        """One apply unit, or None."""
        with self._db.read() as db:
            found = applied.units(db.conn, None, key=key)
        return found[0] if found else None

    def video_owners(self, video_ids: Sequence[str]) -> dict[str, str]:
        """Which ledger entry owns each video: an item's key, or the unit whose operation created it."""
        with self._db.read() as db:
            return applied.owners(db.conn, list(video_ids))

    # ------------------------------------------------------------------ one run

    def item_activity(self, run_id: str) -> dict[str, int]:
        """What the run did to the items (state/activity.py: created, retried, completed, skipped...)."""
        with self._db.read() as db:
            return activity.item_activity(db, run_id)

    def unit_activity(self, run_id: str, unit_keys: set[str]) -> dict[str, int]:
        """What the run did to these apply units (state/activity.py: done, retried, failed, skipped...)."""
        with self._db.read() as db:
            return activity.unit_activity(db, run_id, unit_keys)
