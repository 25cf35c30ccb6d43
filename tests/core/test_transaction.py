"""The switch to WAL (core/transaction.use_wal): processes opening a new file at once all get it."""

from __future__ import annotations

import multiprocessing
import sqlite3
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from videoferry.core.transaction import use_wal

#: Processes opening one new file at once, and how many new files. Before use_wal, 4 processes lost the
#: race ("database is locked") in 9 of 20 new limiter files and 6 of 15 new ledgers here.
OPENERS, FILES = 4, 8


def _open(kind: str, path: str, start: Barrier, out: Queue) -> None:
    """Open `path` as a ledger or a shared rate limiter once every opener is ready; report ok or the error."""
    from videoferry.connectors.limiter import ApiRateLimiter
    from videoferry.state.ledger import Ledger

    start.wait()  # after the imports, so that the openers meet the new file together
    try:
        if kind == "ledger":
            Ledger.open(path).close()
        else:
            ApiRateLimiter.sqlite(path, "tok", per_second=5, per_minute=1000).close()
        out.put("ok")
    except Exception as exc:  # reported to the test, which names it
        out.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("kind", ["ledger", "limiter"])
def test_processes_opening_a_new_file_at_once_all_open_it(tmp_path: Path, kind: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    for n in range(FILES):
        path = tmp_path / f"{kind}-{n}.db"
        out = ctx.Queue()
        start = ctx.Barrier(OPENERS)
        procs = [ctx.Process(target=_open, args=(kind, str(path), start, out)) for _ in range(OPENERS)]
        for p in procs:
            p.start()
        answers = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        assert answers == ["ok"] * OPENERS, f"file {n}: {answers}"
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_locked_past_the_bound_is_named_locked(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            use_wal(other, 0.2)
        holder.execute("COMMIT")
        assert use_wal(other, 0.2) == "wal"
    finally:
        other.close()
        holder.close()
