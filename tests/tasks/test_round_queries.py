"""The ledger queries a migration's schedule asks every round read the items in play, not the whole table."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from tests.state.helpers import spec
from videoferry.state import Ledger
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.readiness import Watcher
from videoferry.tasks.migrate.schedule import _creates_left


def _plans(ledger: Ledger, call: Callable[[], Any]) -> list[str]:
    """The query plans (EXPLAIN QUERY PLAN details) of every statement `call` makes on the ledger."""
    conn: sqlite3.Connection = ledger._db.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        call()
    finally:
        conn.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert selects, f"no query seen in {statements}"
    return [str(row[-1]) for s in selects for row in conn.execute(f"EXPLAIN QUERY PLAN {s}")]


def _ledger(path: Path) -> Ledger:
    ledger = Ledger.open(path, busy_timeout=5.0)
    run_id = ledger.start_run("migrate", {})
    ledger.plan([spec(f"k{n:03d}", n) for n in range(50)], run_id)
    return ledger


def test_creates_left_counts_two_states_through_the_index(tmp_path: Path) -> None:
    """Asked once per poll interval while transfers run: a count of planned and creating items that
    searches the state index (grouping every state read the whole index, O(run) each time)."""
    ledger = _ledger(tmp_path / "ledger.db")
    try:
        ctx = cast(MigrateContext, SimpleNamespace(ledger=ledger))
        assert _creates_left(ctx, True) == 50
        plans = _plans(ledger, lambda: _creates_left(ctx, True))
        assert plans and all("SCAN" not in p for p in plans), plans
        assert any("items_state" in p for p in plans), plans
    finally:
        ledger.close()


def test_watching_counts_through_the_index(tmp_path: Path) -> None:
    """Asked every round: the watched items' count searches the state index."""
    ledger = _ledger(tmp_path / "ledger.db")
    try:
        watcher = Watcher(cast(MigrateContext, SimpleNamespace(ledger=ledger)))
        assert watcher.watching() == 0
        plans = _plans(ledger, watcher.watching)
        assert plans and all("SCAN" not in p for p in plans), plans
    finally:
        ledger.close()
