"""Planning: upserting item specs by key; new items planned, changes applied only where they are safe."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from videoferry.core.item import ItemSpec, owes_metadata
from videoferry.state import schema
from videoferry.state.columns import SPEC_COLUMNS, meta_pending, spec_columns, spec_from_row, spec_values
from videoferry.state.db import fetch
from videoferry.state.journal import BIRTH_COLUMNS, event, write_births
from videoferry.state.machine import COMPLETE_STATES, FAILED, PLANNED
from videoferry.state.models import PlanResult

_CHUNK = 900  # specs per batch: bound parameters per IN (...) list
_BIRTHS = 20_000  # new items held back to be written together (the items table, then the journal)
_ROW_AT = BIRTH_COLUMNS.index("row")
_ALL_KEYS = (
    2_000_000  # up to this many stored items, plan() reads every key's state at once (~200 MB at most)
)
_READ = ("key", "row", "state", "video_id", "create_title", "create_description", "last_run", *SPEC_COLUMNS)


def _same_but_signature(new: Any, old: Any) -> bool:
    """Whether two http(s) sources differ only in their query string or fragment (a URL signed again)."""
    if not isinstance(new, str) or not isinstance(old, str):
        return False
    if not new.lower().startswith(("http://", "https://")):
        return False
    return new.split("#", 1)[0].split("?", 1)[0] == old.split("#", 1)[0].split("?", 1)[0]


def _batched(specs: Iterable[ItemSpec], size: int) -> Iterator[list[ItemSpec]]:
    batch: list[ItemSpec] = []
    for spec in specs:
        batch.append(spec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Planner:
    """The running counts of one plan() call, inside its one transaction."""

    def __init__(self, conn: sqlite3.Connection, now: str, run_id: str | None) -> None:
        self.conn, self.now, self.run_id = conn, now, run_id
        self.added = self.updated = self.unchanged = self.already_done = 0
        self.conflicts: list[str] = []
        self.duplicates: list[str] = []
        self.seen: set[str] = set()
        # New items not yet written (BIRTH_COLUMNS values): written _BIRTHS at a time, not a batch's few
        # hundred between other writes (each table then grows in long runs of pages; ~1 MB per 1000 held).
        self.births: list[tuple[Any, ...]] = []
        self.texts: dict[tuple[Any, ...], str] = {}  # list columns' JSON by value (spec_values)
        # Every stored key's state in one query, made at the first batch (a first plan finds none; a plan
        # given no spec makes none): no per-batch look-ups. A ledger too big to hold in memory (known None)
        # is looked up batch by batch instead.
        stored = conn.execute("SELECT count(*) FROM items").fetchone()[0]
        self.known: dict[str, str] | None = {} if stored <= _ALL_KEYS else None
        self.known_read = stored == 0
        self.new_ledger = stored == 0
        self.written = False  # whether any new item was written yet (the first write may defer indexes)
        #: The secondary indexes this plan dropped (name -> its CREATE statement), built again by finish().
        self.deferred: dict[str, str] = {}

    def batch(self, specs: list[ItemSpec]) -> None:
        fresh: list[ItemSpec] = []
        for spec in specs:
            if spec.key in self.seen:
                self.duplicates.append(spec.key)
                continue
            self.seen.add(spec.key)
            fresh.append(spec)
        if not fresh:
            return
        # One narrow look-up of every key's state; whole rows only of the items a spec may still change.
        keys = [spec.key for spec in fresh]
        if self.known is not None and not self.known_read:
            self.known_read = True
            self.known = dict(self.conn.execute("SELECT key, state FROM items").fetchall())
        if self.known is not None:
            states = {key: self.known[key] for key in keys if key in self.known}
        else:
            sql = f"SELECT key, state FROM items WHERE key IN ({', '.join('?' * len(keys))})"
            states = dict(self.conn.execute(sql, keys).fetchall())
        open_keys = [k for k, state in states.items() if state not in COMPLETE_STATES]
        existing: dict[str, dict[str, Any]] = {}
        if open_keys:
            sql = f"SELECT {', '.join(_READ)} FROM items WHERE key IN ({', '.join('?' * len(open_keys))})"
            existing = {r["key"]: r for r in fetch(self.conn, sql, open_keys)}
        births: list[tuple[Any, ...]] = []
        touches: list[tuple[Any, ...]] = []
        for spec in fresh:
            state = states.get(spec.key)
            if state is None:
                births.append(self._birth(spec))
            elif state in COMPLETE_STATES:
                self.already_done += 1
            else:
                item, old = spec_columns(spec), existing[spec.key]
                if not self._update(item, old) and (item["row"], self.run_id) != (
                    old["row"],
                    old["last_run"],
                ):
                    touches.append((item["row"], self.run_id, item["key"]))
        # After this batch's own events (changes noted above), as when each batch wrote its new items at once.
        self.births += births
        if len(self.births) >= _BIRTHS:
            self.flush()
        if touches:
            self.conn.executemany("UPDATE items SET row = ?, last_run = ? WHERE key = ?", touches)

    def _birth(self, spec: ItemSpec) -> tuple[Any, ...]:
        """None -> planned: a new item's BIRTH_COLUMNS (nothing was sent yet: create_* are NULL)."""
        self.added += 1
        return (*spec_values(spec, self.texts), int(owes_metadata(spec, None, None)))

    def flush(self) -> None:
        """Write the new items held back, with their journal rows (journal.write_births)."""
        if not self.births:
            return
        if not self.written:
            self.written = True
            if self.new_ledger and len(self.births) >= _BIRTHS:
                self._defer_indexes()
        messages = [f"planned from row {values[_ROW_AT]}" for values in self.births]
        write_births(self.conn, self.now, self.run_id, self.births, messages)
        self.births = []

    def _defer_indexes(self) -> None:
        """A new ledger's first bulk write: its secondary indexes (schema.ITEMS_INDEXES, and EVENTS_INDEXES
        while the journal holds no more rows than this write adds) are dropped, and finish() builds them again
        once every row is in: one sort each instead of an insert per row at a random place in each (a 100k-row
        plan: about 0.3 s less). Nothing reads them meanwhile (a new ledger has no item to look up by state,
        row or video). Inside plan()'s one transaction: a plan that fails or is killed takes the drop back
        with its rows, so the ledger is never left without them."""
        wanted = dict(schema.ITEMS_INDEXES)
        if self.conn.execute("SELECT count(*) FROM events").fetchone()[0] <= len(self.births):
            wanted.update(schema.EVENTS_INDEXES)
        present = {row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        self.deferred = {name: sql for name, sql in wanted.items() if name in present}
        for name in self.deferred:
            self.conn.execute(f"DROP INDEX {name}")

    def finish(self) -> None:
        """Write the new items still held back and build the indexes _defer_indexes() dropped."""
        self.flush()
        for statement in self.deferred.values():
            self.conn.execute(statement)
        self.deferred = {}

    def _update(self, item: dict[str, Any], old: dict[str, Any]) -> bool:
        """Apply what may change of a known item; True when its row was written."""
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
            self.conflicts.append(item["key"])
            self._note(old, f"not applied: {', '.join(identity)} changed while a video may exist")
        if not apply:
            if not conflict:
                self.unchanged += 1
            return False
        changes = {f: item[f] for f in apply}
        changes["meta_pending"] = meta_pending({**old, **changes})
        changes.update(row=item["row"], last_run=self.run_id, updated_at=self.now)
        columns = ", ".join(f'"{c}" = ?' for c in changes)
        self.conn.execute(f"UPDATE items SET {columns} WHERE key = ?", (*changes.values(), item["key"]))
        self._note(old, f"changed: {', '.join(apply)}")
        if not conflict:
            self.updated += 1
        return True

    def _note(self, old: dict[str, Any], message: str) -> None:
        self.flush()  # new items of earlier batches first: the journal's order stays batch by batch
        state = old["state"]
        event(
            self.conn,
            self.now,
            kind="plan",
            run_id=self.run_id,
            key=old["key"],
            from_state=state,
            to_state=state,
            message=message,
        )

    def result(self) -> PlanResult:
        return PlanResult(
            self.added,
            self.updated,
            self.unchanged,
            self.already_done,
            tuple(self.conflicts),
            tuple(self.duplicates),
        )


def plan(conn: sqlite3.Connection, now: str, specs: Iterable[ItemSpec], run_id: str | None) -> PlanResult:
    """Upsert specs by key inside the caller's transaction (see Ledger.plan for the rules)."""
    planner = _Planner(conn, now, run_id)
    with _collector_paused():
        for batch in _batched(specs, _CHUNK):
            planner.batch(batch)
        planner.finish()
    return planner.result()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (then as it was): a plan makes a spec and a row per item,
    none of them in a cycle (reference counting frees them), and the collector would walk them again and
    again as they pile up (a 100k-row plan: about 0.3 s of its CPU)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
