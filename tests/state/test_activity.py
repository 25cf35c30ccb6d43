"""What one run did, told from the journal: created, retried, completed, failed, already done (skipped)."""

from __future__ import annotations

from pathlib import Path

from tests.state.helpers import spec
from videoferry.state.ledger import Ledger


def _upload(ledger: Ledger, run: str, key: str, n: int) -> None:
    ledger.begin_create(key, run, key)
    ledger.create_started_upload(
        key, run, f"{n}{n}{n}{n}{n}{n}{n}{n}-1111-1111-1111-111111111111", "http://x/e", 10
    )
    ledger.record_offset(key, 10)
    ledger.upload_complete(key, run)


def test_each_run_counts_only_what_it_did(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "l.db")
    first = ledger.start_run("migrate", {})
    ledger.plan([spec(k, i, source=f"/v/{k}.mp4", via="tus") for i, k in enumerate("abc")], first)
    _upload(ledger, first, "a", 1)
    ledger.set_status("a", first, "done")
    ledger.finished("a", first)
    ledger.begin_create("b", first, "b")
    ledger.fail("b", first, "io", "the source could not be read")
    assert ledger.item_activity(first) == {
        "created": 2,
        "retried": 0,
        "call_retries": 0,
        "completed": 1,
        "already_done": 0,
        "failed": 1,
    }
    ledger.finish_run(first, "incomplete")

    second = ledger.start_run("migrate", {})
    ledger.plan([spec(k, i, source=f"/v/{k}.mp4", via="tus") for i, k in enumerate("abc")], second)
    ledger.requeue_failed(second)  # b: failed before, tried again
    ledger.note("b", second, "init_upload: 503, tried again", kind="retry")
    _upload(ledger, second, "b", 2)
    ledger.set_status("b", second, "done")
    assert ledger.item_activity(second) == {
        "created": 1,
        "retried": 1,
        "call_retries": 1,
        "completed": 1,  # b; a was complete before: skipped
        "already_done": 1,
        "failed": 0,
    }
    ledger.finish_run(second, "incomplete")

    third = ledger.start_run("migrate", {})  # a rerun with nothing left but c, which it leaves planned
    assert ledger.item_activity(third) == {
        "created": 0,
        "retried": 0,
        "call_retries": 0,
        "completed": 0,
        "already_done": 2,
        "failed": 0,
    }
    ledger.close()
