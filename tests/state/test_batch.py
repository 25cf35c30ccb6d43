"""Batch steps: the same rows and journal as the single steps, all or nothing, and the same refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.state.helpers import drive, endpoint_for, spec
from videoferry.state import InvalidTransition, Ledger, LedgerError, UnknownItem
from videoferry.state.batch import CreateIntent, UploadSession
from videoferry.state.columns import meta_pending

KEYS = ("k1", "k2", "k3")
#: Columns that differ between two ledgers written at different times by different runs.
_VOLATILE = {"created_intent_at", "first_seen_run", "last_run", "updated_at", "done_at", "finished_at"}


def _specs() -> list[Any]:
    return [
        spec("k1", 1, source_size=10, tags=["a"]),
        spec("k2", 2, source_size=20, chapters=[(0, "Intro")]),
        spec("k3", 3, source_size=30, description="about k3"),
    ]


def _rows(ledger: Ledger) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in _VOLATILE} for row in ledger.report_rows()]


def _journal(ledger: Ledger) -> list[tuple[Any, ...]]:
    return [(e.kind, e.key, e.from_state, e.to_state, e.message) for e in ledger.events()]


def _single(ledger: Ledger, run: str) -> None:
    """The same steps one item at a time, each step for every item before the next (the batches' order)."""
    for n, key in enumerate(KEYS, 1):
        ledger.begin_create(key, run, f"Sent {key}", create_description="sent", source_version=f"v{n}")
    for n, key in enumerate(KEYS, 1):
        ledger.create_started_upload(key, run, f"vid-{key}", endpoint_for(key), n * 10)
    for key in KEYS:
        ledger.upload_complete(key, run)
    for key in KEYS:
        ledger.set_status(key, run, "done")
    for key in KEYS:
        ledger.finished(key, run)


def _batched(ledger: Ledger, run: str) -> None:
    ledger.begin_creates(run, [CreateIntent(k, f"Sent {k}", "sent", f"v{n}") for n, k in enumerate(KEYS, 1)])
    sessions = [UploadSession(k, f"vid-{k}", endpoint_for(k), n * 10) for n, k in enumerate(KEYS, 1)]
    ledger.create_started_uploads(run, sessions)
    ledger.uploads_complete(run, KEYS)
    ledger.apply_statuses(run, {f"vid-{k}": "done" for k in KEYS})
    ledger.finish_all(run, KEYS)


def test_batch_steps_write_what_the_single_steps_write(tmp_path: Path) -> None:
    written = []
    for name, steps in (("single", _single), ("batch", _batched)):
        with Ledger.open(tmp_path / f"{name}.db") as ledger:
            run = ledger.start_run("migrate")
            ledger.plan(_specs(), run)
            steps(ledger, run)
            written.append((_rows(ledger), _journal(ledger)))
            assert ledger.counts()["finished"] == 3
    assert written[0] == written[1]
    rows, journal = written[1]
    assert [r["video_id"] for r in rows] == ["vid-k1", "vid-k2", "vid-k3"]
    assert [r["meta_pending"] for r in rows] == [False, False, False]
    assert len(journal) == 1 + 3 * 6  # the run; planned, creating, uploading, uploaded, done, finished


def test_one_item_in_the_wrong_state_refuses_the_whole_batch(ledger: Ledger, run_id: str) -> None:
    ledger.plan(_specs(), run_id)
    ledger.begin_create("k2", run_id, "Sent k2")
    before = (_rows(ledger), _journal(ledger))
    with pytest.raises(InvalidTransition, match="k2"):
        ledger.begin_creates(run_id, [CreateIntent(k, f"Sent {k}") for k in KEYS])
    with pytest.raises(InvalidTransition, match="k1"):
        ledger.uploads_complete(run_id, ["k1"])
    assert (_rows(ledger), _journal(ledger)) == before


def test_unknown_and_repeated_keys_are_refused(ledger: Ledger, run_id: str) -> None:
    ledger.plan(_specs(), run_id)
    with pytest.raises(UnknownItem):
        ledger.begin_creates(run_id, [CreateIntent("k1", "t"), CreateIntent("nope", "t")])
    with pytest.raises(ValueError, match="'k1' appears twice"):
        ledger.begin_creates(run_id, [CreateIntent("k1", "t"), CreateIntent("k1", "t")])
    assert ledger.counts()["planned"] == 3


def test_a_video_is_given_to_one_item_only(ledger: Ledger, run_id: str) -> None:
    ledger.plan(_specs(), run_id)
    drive(ledger, "owner", "uploading", run_id)  # owns vid-owner
    ledger.begin_creates(run_id, [CreateIntent(k, f"Sent {k}") for k in KEYS])
    same = [UploadSession("k1", "vid-x", endpoint_for("k1"), 10), UploadSession("k2", "vid-x", "e", 20)]
    with pytest.raises(LedgerError, match="vid-x already belongs to item 'k1', not 'k2'"):
        ledger.create_started_uploads(run_id, same)
    taken = [UploadSession("k3", "vid-owner", endpoint_for("k3"), 30)]
    with pytest.raises(LedgerError, match="vid-owner already belongs to item 'owner', not 'k3'"):
        ledger.create_started_uploads(run_id, taken)
    assert ledger.counts()["creating"] == 3


def test_stored_meta_pending_matches_its_columns_along_the_path(ledger: Ledger, run_id: str) -> None:
    ledger.plan(_specs(), run_id)
    ledger.begin_creates(run_id, [CreateIntent(k, f"Sent {k}", None) for k in KEYS])  # titles differ: owed
    ledger.create_started_uploads(run_id, [UploadSession(k, f"v-{k}", endpoint_for(k), 1) for k in KEYS])
    ledger.uploads_complete(run_id, KEYS)
    ledger.apply_statuses(run_id, {f"v-{k}": "done" for k in KEYS})
    with ledger._db.read() as db:
        rows = list(db.query("SELECT * FROM items ORDER BY key"))
    assert [row["meta_pending"] for row in rows] == [1, 1, 1]
    assert [row["meta_pending"] for row in rows] == [meta_pending(row) for row in rows]


def test_requeue_failed_moves_many_items_in_one_batch(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "a", "planned", run_id)
    ledger.fail("a", run_id, "source", "unreadable")
    drive(ledger, "b", "processing", run_id)
    ledger.fail("b", run_id, "watch_timeout", "gave up")
    drive(ledger, "c", "error", run_id)
    assert ledger.requeue_failed(run_id, include_service_errors=True) == {"planned": 2, "processing": 1}
    assert {k: ledger.get(k).state for k in "abc"} == {"a": "planned", "b": "processing", "c": "planned"}  # type: ignore[union-attr]
    moves = [(e.key, e.from_state, e.to_state) for e in ledger.events()[-3:]]
    assert moves == [("a", "failed", "planned"), ("b", "failed", "processing"), ("c", "error", "planned")]
