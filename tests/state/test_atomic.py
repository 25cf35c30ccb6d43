"""Atomicity: a failure inside a transaction leaves nothing behind; threads; a SIGKILL mid-transaction."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.line_interrupt import each_line_interrupted
from tests.state.helpers import ENDPOINT, REPO, drive, sigkill_mid_transaction, spec
from videoferry.core.item import ItemSpec
from videoferry.core.transaction import immediate
from videoferry.state import Ledger, LedgerError


def _poison_events(path: Path) -> None:
    """Make every journal insert fail, from outside the Ledger (a real failure inside its transaction)."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    conn.commit()
    conn.close()


def test_failed_journal_write_rolls_back_the_item_update(
    ledger: Ledger, ledger_path: Path, run_id: str
) -> None:
    drive(ledger, "k", "creating", run_id)
    before, journal = ledger.get("k"), ledger.events("k")
    _poison_events(ledger_path)
    with pytest.raises(LedgerError, match="disk says no"):
        ledger.create_started_upload("k", run_id, "vid-1", ENDPOINT, 100, request_id="r")
    assert ledger.get("k") == before  # no video id, no endpoint, still creating
    assert ledger.events("k") == journal
    assert ledger.keys_for_videos(["vid-1"]) == {}


def test_failing_rows_mid_plan_leave_nothing(ledger: Ledger, run_id: str) -> None:
    def rows() -> Iterator[ItemSpec]:
        for i in range(2500):  # more than one internal chunk is written before the failure
            yield spec(f"k{i}", i)
        raise RuntimeError("inventory reader crashed")

    with pytest.raises(RuntimeError):
        ledger.plan(rows(), run_id)
    assert ledger.counts()["planned"] == 0
    assert ledger.events() == [e for e in ledger.events() if e.kind == "run"]


def test_journal_is_append_only(ledger: Ledger, ledger_path: Path, run_id: str) -> None:
    drive(ledger, "k", "creating", run_id)
    conn = sqlite3.connect(ledger_path)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM events")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE events SET message = 'x'")
    finally:
        conn.close()


def test_threads_transition_different_items(ledger: Ledger, ledger_path: Path, run_id: str) -> None:
    keys = [f"t{t}-{i}" for t in range(8) for i in range(25)]
    ledger.plan([spec(k, n, via="tus", source_size=300) for n, k in enumerate(keys)], run_id)
    other = Ledger.open(ledger_path)  # a second connection writing at the same time (busy handling)
    errors: list[BaseException] = []

    def work(ledger_: Ledger, mine: list[str]) -> None:
        try:
            for key in mine:
                ledger_.begin_create(key, run_id, key)
                ledger_.create_started_upload(key, run_id, f"vid-{key}", f"{ENDPOINT}/{key}", 300)
                for offset in (100, 200, 300):
                    ledger_.record_offset(key, offset)
                ledger_.upload_complete(key, run_id)
                ledger_.apply_statuses(run_id, {f"vid-{key}": "processing"})
                ledger_.set_status(key, run_id, "done")
                ledger_.finished(key, run_id)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(ledger if t % 2 else other, keys[t * 25 : (t + 1) * 25]))
        for t in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    other.close()
    assert not errors, errors
    assert ledger.counts()["finished"] == len(keys)
    transitions = [e for e in ledger.events() if e.kind == "transition"]
    # planned, creating, uploading, uploaded, processing, done, finished
    assert len(transitions) == len(keys) * 7
    assert all(ledger.get(k).upload_offset == 300 for k in keys[:10])  # type: ignore[union-attr]


_KILL_MID_PLAN = """
import sys
sys.path.insert(0, sys.argv[2])
from videoferry.core.item import ItemSpec, Via
from videoferry.state import Ledger
ledger = Ledger.open(sys.argv[1])
run = ledger.start_run("migrate", {})
ledger.plan([ItemSpec(key="committed", source="/c.mp4", parent_id="", via=Via.TUS, title="c")], run)

def rows():
    for i in range(3000):
        if i == 2000:
            print("mid-transaction", flush=True)
            sys.stdin.readline()  # killed here, with 2000 rows written but not committed
        yield ItemSpec(key=f"k{i}", row=i, source=f"/v/{i}.mp4", parent_id="", via=Via.TUS, title=str(i))

ledger.plan(rows(), run)
"""


def test_sigkill_mid_plan_leaves_a_consistent_ledger(ledger_path: Path) -> None:
    assert sigkill_mid_transaction(_KILL_MID_PLAN, ledger_path) == "mid-transaction"
    with Ledger.open(ledger_path) as ledger:  # integrity checked on open
        assert ledger.counts()["planned"] == 1
        assert ledger.get("committed") is not None and ledger.get("k0") is None
        run = ledger.start_run("migrate", {})  # the dead run's lock went with its process
        assert [r.status for r in ledger.runs()] == ["interrupted", "running"]
        assert ledger.runs()[-1].run_id == run


_KILL_BUSY = """
import sys
sys.path.insert(0, sys.argv[2])
from videoferry.core.item import ItemSpec, Via
from videoferry.state import Ledger
ledger = Ledger.open(sys.argv[1])
run = ledger.start_run("migrate", {})
keys = [f"k{i}" for i in range(400)]
ledger.plan([ItemSpec(key=k, source=f"/{k}.mp4", parent_id="", via=Via.TUS, title=k, source_size=50)
             for k in keys], run)
print("planned", flush=True)
for key in keys:
    ledger.begin_create(key, run, key)
    ledger.create_started_upload(key, run, "vid-" + key, "https://up.test/" + key, 50)
    ledger.record_offset(key, 25)
    ledger.upload_complete(key, run)
    ledger.set_status(key, run, "done")
"""


def test_sigkill_during_transitions_leaves_items_matching_their_journal(ledger_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _KILL_BUSY, str(ledger_path), str(REPO)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "planned"
        with Ledger.open(ledger_path) as watcher:
            deadline = time.monotonic() + 60
            while watcher.counts()["done"] < 20 and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    with Ledger.open(ledger_path) as ledger:
        items = ledger.items()
        assert len(items) == 400
        assert ledger.counts()["done"] >= 20
        for item in items:
            transitions = [e for e in ledger.events(item.key) if e.kind == "transition"]
            assert transitions[-1].to_state == item.state, item.key
            if item.state in ("uploading", "uploaded", "done"):
                assert item.video_id == f"vid-{item.key}"
            if item.state == "uploading":
                assert item.upload_endpoint is not None
            if item.state == "creating":
                assert item.created_intent_at is not None and item.video_id is None


def test_a_ctrl_c_at_any_line_of_a_transaction_leaves_none_open(ledger: Ledger, run_id: str) -> None:
    """Ctrl-C raises KeyboardInterrupt between any two lines of the main thread: wherever it lands in a write
    transaction, the transaction is committed or rolled back whole and the next write starts cleanly (CI: one
    landed right after BEGIN and the run's own 'interrupted' record failed with 'cannot start a transaction
    within a transaction')."""
    code = immediate.__wrapped__.__code__  # type: ignore[attr-defined]

    def next_write_goes_through(line: int) -> None:
        drive(ledger, f"after{line}", "creating", run_id)  # nothing was left open
        after = ledger.get(f"after{line}")
        assert after is not None and after.state == "creating"

    landed = each_line_interrupted(
        code, lambda line: drive(ledger, f"k{line}", "creating", run_id), next_write_goes_through
    )
    assert landed >= 3  # it landed on BEGIN's line, the yield and the COMMIT at least
