"""plan()'s bulk path: new items and their journal rows as write_transitions writes them, in batch order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.state.helpers import sigkill_mid_transaction, spec
from videoferry.core.item import Chapter, ItemSpec, Via, owes_metadata
from videoferry.state import Ledger, planning
from videoferry.state.columns import spec_columns
from videoferry.state.journal import Transition, write_births, write_transitions
from videoferry.state.machine import PLANNED
from videoferry.state.schema import EVENTS_INDEXES, ITEMS_INDEXES, VIA_CHECK

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
#: The secondary indexes a plan into a new ledger builds after its rows.
DEFERRED = {*ITEMS_INDEXES, *EVENTS_INDEXES}


def _specs() -> list[ItemSpec]:
    shared = {"tags": ["a", "é"], "chapters": [(0, "Intro"), ("90", "Main")]}
    return [
        spec("full", 2, **shared, privacy_type="custom", privacy_domains=["x.example"], description="About"),
        spec("same-lists", 3, **shared, parent_id="p-1"),
        spec("bare", 4, description="", parent_id=""),
        spec("no-row", None, source_size=1234, via="url", source="https://h.example/v.mp4?sig=1"),
        spec("nowhere", 6, privacy_type="nowhere"),
        # Built directly: a list where a tuple is expected is stored the same (not cached).
        ItemSpec(key="listed", source="/v/l.mp4", parent_id="p", via=Via.SINGLE, title="L", tags=["t"]),  # type: ignore[arg-type]
        spec("chapters-only", 8, chapters=[(1.5, "One")]),
    ]


def _old_births(conn: sqlite3.Connection, now: str, specs: list[ItemSpec], run_id: str | None) -> None:
    """What plan() wrote for new items before its bulk path: one Transition each."""
    transitions = []
    for s in specs:
        values: dict[str, Any] = spec_columns(s)
        key = values.pop("key")
        values["meta_pending"] = int(owes_metadata(s, None, None))
        values["first_seen_run"] = values["last_run"] = run_id
        transitions.append(
            Transition(key, None, PLANNED, run_id, values, message=f"planned from row {s.row}")
        )
    write_transitions(conn, now, transitions)


def _rows(path: Path) -> tuple[list[Any], list[Any]]:
    conn = sqlite3.connect(path)
    try:
        items = conn.execute("SELECT rowid, * FROM items ORDER BY rowid").fetchall()
        events = conn.execute("SELECT * FROM events WHERE kind = 'transition' ORDER BY event_id").fetchall()
    finally:
        conn.close()
    return items, events


@pytest.mark.parametrize("run_id", ["run-1", None])
def test_new_items_are_the_rows_a_transition_each_wrote(tmp_path: Path, run_id: str | None) -> None:
    bulk, single = tmp_path / "bulk.db", tmp_path / "single.db"
    for path in (bulk, single):
        Ledger.open(path, clock=lambda: NOW).close()
    ledger = Ledger.open(bulk, clock=lambda: NOW)
    try:
        result = ledger.plan(_specs(), run_id)
        now = ledger._db.now()
    finally:
        ledger.close()
    assert result.added == len(_specs())
    conn = sqlite3.connect(single, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        _old_births(conn, now, _specs(), run_id)
        conn.execute("COMMIT")
    finally:
        conn.close()
    items, events = _rows(bulk)
    assert (items, events) == _rows(single)
    assert len(items) == len(events) == len(_specs())
    lists = {row[1]: (row[9], row[10]) for row in items}  # rowid, key, ..., tags, chapters
    chapters = '[{"time":0.0,"title":"Intro"},{"time":90.0,"title":"Main"}]'
    assert lists["full"] == lists["same-lists"] == ('["a","é"]', chapters)
    assert lists["listed"] == ('["t"]', None)
    assert events[3][-1] == "planned from row None"


def test_the_journal_keeps_batch_order_when_new_items_wait(
    ledger: Ledger, ledger_path: Path, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger.plan([spec("old1"), spec("old2")], run_id)
    monkeypatch.setattr(planning, "_CHUNK", 2)  # batches: [n1 n2] [old1 n3] [n4 old2] [n5 n6] [n7]
    monkeypatch.setattr(planning, "_BIRTHS", 3)  # new items are written 3 or more at a time, or before a note
    specs = [spec("n1"), spec("n2"), spec("old1", title="New 1"), spec("n3"), spec("n4")]
    specs += [spec("old2", title="New 2"), spec("n5"), spec("n6"), spec("n7")]
    result = ledger.plan(specs, run_id)
    assert (result.added, result.updated) == (7, 2)
    conn = sqlite3.connect(ledger_path)
    try:
        journal = conn.execute(
            "SELECT key, kind FROM events WHERE kind IN ('transition', 'plan') ORDER BY event_id"
        ).fetchall()
    finally:
        conn.close()
    # What one write per batch gave: each batch's notes, then its new items.
    expected = ["old1", "old2", "n1", "n2", "old1", "n3", "old2", "n4", "n5", "n6", "n7"]
    assert [key for key, _ in journal] == expected
    assert [kind for key, kind in journal if key.startswith("old")] == ["transition"] * 2 + ["plan"] * 2
    n4 = ledger.get("n4")
    assert n4 is not None and n4.state == PLANNED and n4.spec.chapters == ()


def test_chapters_that_compare_equal_keep_their_own_text(ledger: Ledger, run_id: str) -> None:
    ledger.plan([spec("a", chapters=[(1, "x")]), spec("b", tags=["1.0", "x"])], run_id)
    a, b = ledger.get("a"), ledger.get("b")
    assert a is not None and a.spec.chapters == (Chapter(1.0, "x"),) and a.spec.tags == ()
    assert b is not None and b.spec.tags == ("1.0", "x") and b.spec.chapters == ()


def test_write_births_checks_what_the_items_checks_check(ledger: Ledger, ledger_path: Path) -> None:
    conn = sqlite3.connect(ledger_path, isolation_level=None)
    try:
        (ddl,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'items'").fetchone()
        # write_births checks these two itself (SQLite skips them for its rows): add a new CHECK there too.
        assert ddl.count("CHECK") == 2 and "CHECK (state IN (" in ddl and f"CHECK ({VIA_CHECK})" in ddl
        good = ("k", 1, "/v/k.mp4", None, "K", None, None, None, None, None, None, None, "tus", 0)
        conn.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.IntegrityError) as refused:
            write_births(conn, "now", "run", [good, (*good[:12], "bogus", 0)], ["a", "b"])
        with pytest.raises(sqlite3.IntegrityError) as by_sqlite:
            conn.execute("INSERT INTO items (key, source, state, via) VALUES ('x', 's', 'planned', 'bogus')")
        assert str(refused.value) == str(by_sqlite.value)
        with pytest.raises(sqlite3.IntegrityError, match="NOT NULL"):  # SQLite's own checks still hold
            write_births(conn, "now", "run", [(*good[:2], None, *good[3:])], ["a"])
        assert conn.execute("PRAGMA ignore_check_constraints").fetchone() == (0,)
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def _indexes(where: sqlite3.Connection | Path) -> set[str]:
    """The names of the indexes in a ledger (through an open connection, or its file)."""
    conn = where if isinstance(where, sqlite3.Connection) else sqlite3.connect(where)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        if conn is not where:
            conn.close()


def test_a_new_ledgers_bulk_plan_builds_its_indexes_after_its_rows(
    ledger: Ledger, ledger_path: Path, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planning, "_CHUNK", 60)
    monkeypatch.setattr(planning, "_BIRTHS", 50)  # a bulk write: 50 new items or more at once
    seen: list[set[str]] = []

    def rows() -> Iterator[ItemSpec]:
        for i in range(300):
            if i == 200:  # after the first bulk write, inside the plan's transaction
                seen.append(_indexes(ledger._db.conn))
            yield spec(f"k{i:03d}", i, via="single" if i % 2 else "tus")

    assert ledger.plan(rows(), run_id).added == 300
    assert DEFERRED <= _indexes(ledger_path) and not DEFERRED & seen[0]
    assert ledger.count(["planned"]) == 300 and [i.key for i in ledger.items(limit=2)] == ["k000", "k001"]
    assert len(ledger.events(key="k150")) == 1
    ledger.begin_create("k007", run_id, "T")
    ledger.create_accepted("k007", run_id, "vid-7")
    conn = sqlite3.connect(ledger_path)
    try:  # items_video_id holds again: SQLite refuses a second item of one video
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            conn.execute("UPDATE items SET video_id = 'vid-7' WHERE key = 'k009'")
    finally:
        conn.close()
    # A ledger that holds items keeps its indexes through a plan, however big.
    seen.clear()
    assert ledger.plan((spec(f"n{i:03d}", 400 + i) for i in range(300)), run_id).added == 300
    assert DEFERRED <= _indexes(ledger_path)


def test_a_failed_bulk_plan_leaves_a_new_ledger_its_indexes(
    ledger: Ledger, ledger_path: Path, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planning, "_BIRTHS", 50)

    def rows() -> Iterator[ItemSpec]:
        for i in range(2000):  # bulk writes happen before the failure
            yield spec(f"k{i}", i)
        raise RuntimeError("inventory reader crashed")

    with pytest.raises(RuntimeError):
        ledger.plan(rows(), run_id)
    assert ledger.count(["planned"]) == 0 and DEFERRED <= _indexes(ledger_path)


_KILL_BULK_PLAN = """
import sys
sys.path.insert(0, sys.argv[2])
from videoferry.core.item import ItemSpec, Via
from videoferry.state import Ledger, planning
planning._BIRTHS = 500  # bulk writes of 500 new items
ledger = Ledger.open(sys.argv[1])
run = ledger.start_run("migrate", {})

def rows():
    for i in range(3000):
        if i == 2000:  # 1800 rows written, not committed, the indexes dropped in this transaction
            found = ledger._db.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'items_state'")
            print("mid-transaction", found.fetchone()[0], flush=True)
            sys.stdin.readline()  # killed here
        yield ItemSpec(key=f"k{i}", row=i, source=f"/v/{i}.mp4", parent_id="", via=Via.TUS, title=str(i))

ledger.plan(rows(), run)
"""


def test_sigkill_mid_bulk_plan_leaves_a_new_ledger_empty_with_its_indexes(ledger_path: Path) -> None:
    assert sigkill_mid_transaction(_KILL_BULK_PLAN, ledger_path) == "mid-transaction 0"
    with Ledger.open(ledger_path) as ledger:  # integrity checked on open
        assert sum(ledger.counts().values()) == 0 and ledger.get("k0") is None
        assert [e.kind for e in ledger.events()] == ["run"]
        assert DEFERRED <= _indexes(ledger._db.conn)
        run = ledger.start_run("migrate", {})
        assert ledger.plan([spec("k0", 1)], run).added == 1 and ledger.count(["planned"]) == 1
