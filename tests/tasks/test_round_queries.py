"""The ledger queries a migration asks every round and every poll read the items in play, not the table."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from tests.state.helpers import spec
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.state import Ledger
from videoferry.state.batch import CreateIntent, UploadSession
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.readiness import PAGE_SIZE, Watcher
from videoferry.tasks.migrate.schedule import _creates_left, creates_bound


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


def _steps(ledger: Ledger, call: Callable[[], Any]) -> int:
    """SQLite virtual machine steps `call` takes on the ledger (the progress handler at every step): what
    a query reads, counted without a clock."""
    conn: sqlite3.Connection = ledger._db.conn
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(step, 1)
    try:
        call()
    finally:
        conn.set_progress_handler(None, 1)
    return steps


def _ledger(path: Path, items: int = 50, uploaded: int = 0) -> Ledger:
    """A ledger of `items` planned items, the first `uploaded` of them moved on to uploaded (watched)."""
    ledger = Ledger.open(path, busy_timeout=5.0)
    run_id = ledger.start_run("migrate", {})
    ledger.plan([spec(f"k{n:05d}", n) for n in range(items)], run_id)
    keys = [f"k{n:05d}" for n in range(uploaded)]
    ledger.begin_creates(run_id, [CreateIntent(k, f"Title {k}") for k in keys])
    ledger.create_started_uploads(run_id, [UploadSession(k, f"v-{k}", "https://up.test/x", 10) for k in keys])
    ledger.uploads_complete(run_id, keys)
    return ledger


def _ctx(ledger: Ledger, per_second: int = 10, per_minute: int = 300) -> MigrateContext:
    """What _creates_left reads of a migration's context: the ledger, the limiter, the poll interval."""
    limiter = ApiRateLimiter.memory(per_second=per_second, per_minute=per_minute)
    client = SimpleNamespace(transport=SimpleNamespace(limiter=limiter))
    return cast(MigrateContext, SimpleNamespace(ledger=ledger, client=client, poll_seconds=lambda: 5.0))


def test_creates_left_counts_two_states_through_the_index(tmp_path: Path) -> None:
    """Asked once per poll interval while transfers run: a count of planned and creating items that
    searches the state index (grouping every state read the whole index, O(run) each time)."""
    ledger = _ledger(tmp_path / "ledger.db")
    try:
        ctx = _ctx(ledger)
        assert _creates_left(ctx, True, creates_bound(ctx)) == 50
        plans = _plans(ledger, lambda: _creates_left(ctx, True, creates_bound(ctx)))
        assert plans and all("SCAN items" not in p for p in plans), (
            plans
        )  # a bounded count scans its subquery
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
        assert plans and all("SCAN items" not in p for p in plans), (
            plans
        )  # a bounded count scans its subquery
    finally:
        ledger.close()


def test_creates_left_reads_no_further_than_its_bound(tmp_path: Path) -> None:
    """Asked every round while polls are held: the count stops one past the largest number it is compared
    with (the minute's budget, a poll interval of creates), so what it reads does not grow with the run
    (a whole count read every planned item's index entry each round: O(run^2) CPU over a run)."""
    small, big = _ledger(tmp_path / "small.db", 40), _ledger(tmp_path / "big.db", 3000)
    try:
        for ledger in (small, big):  # the limits make the bound 5 * 6 + 1 = 31: a poll interval's creates
            ctx = _ctx(ledger, per_second=6, per_minute=20)
            assert creates_bound(ctx) == 31
            assert _creates_left(ctx, True, creates_bound(ctx)) == 31
            assert _creates_left(ctx, True, 1000) == 31  # never past the bound, whatever is asked
            wide = _ctx(ledger, per_second=10, per_minute=3000)
            assert _creates_left(wide, True, creates_bound(wide)) == min(
                ledger.count(["planned"]), 3001
            )
        bounded = [
            _steps(led, functools.partial(_creates_left, _ctx(led, 6, 20), True, 31)) for led in (small, big)
        ]
        whole = [_steps(led, functools.partial(led.count, ["planned", "creating"])) for led in (small, big)]
        assert bounded[1] == bounded[0], bounded  # the same entries read at 40 and at 3000 planned items
        assert whole[1] > 10 * whole[0], whole  # where a whole count reads them all
    finally:
        small.close()
        big.close()


def test_watching_reads_no_further_than_a_page_and_one(tmp_path: Path) -> None:
    """Every round asks whether any item is watched and whether more than a page is: the count stops at a
    page and one, whatever the number watched."""
    few, many = _ledger(tmp_path / "few.db", 3 * PAGE_SIZE, 30), _ledger(tmp_path / "many.db", 3000, 2000)
    try:
        watchers = [Watcher(_ctx(ledger)) for ledger in (few, many)]
        assert [w.watching() for w in watchers] == [30, PAGE_SIZE + 1]
        assert many.count(["uploaded", "processing"]) == 2000
        bounded = [_steps(w.ctx.ledger, w.watching) for w in watchers]
        assert bounded[1] < 10 * bounded[0], bounded  # 101 entries, not 2000 (30 in the smaller)
        steps = [
            _steps(many, functools.partial(many.count, ["uploaded", "processing"], at_most=n))
            for n in (101, 2000)
        ]
        assert steps[1] > 10 * steps[0], steps
    finally:
        few.close()
        many.close()


def test_a_listings_statuses_are_matched_by_video_id_not_by_state(tmp_path: Path) -> None:
    """A poll's statuses (a page or more of video ids) find their items through the video id index: the
    rows read do not grow with the items watched. Searched by state (SQLite's choice given ten ids or more),
    each call read every watched item: O(run^2) over the poll that ends a run, which lists every video."""
    few, many = _ledger(tmp_path / "few.db", 40, 40), _ledger(tmp_path / "many.db", 3000, 3000)
    try:
        statuses = {f"v-k{n:05d}": "processing" for n in range(30)}
        plans = _plans(many, lambda: many.apply_statuses(None, statuses))
        assert any("items_video_id" in p for p in plans) and not any("items_state" in p for p in plans), plans
        assert many.count(["processing"]) == 30  # the statuses were applied
        again = {f"v-k{n:05d}": "done" for n in range(30, 60)}
        steps = [_steps(led, functools.partial(led.apply_statuses, None, again)) for led in (few, many)]
        assert many.count(["done"]) == 30 and few.count(["done"]) == 10  # few holds 40 items, 10 of these
        assert steps[1] < 5 * steps[0], steps  # 30 rows found, not 3000 watched read (10 in the smaller)
    finally:
        few.close()
        many.close()
