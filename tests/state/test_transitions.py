"""Every allowed item transition through the Ledger API, and rejected ones (state and journal unchanged)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

import pytest

from tests.state.helpers import ENDPOINT, drive, endpoint_for, failed_from, spec
from videoferry.state import STATES, TRANSITIONS, InvalidTransition, Ledger, UnknownItem
from videoferry.state.machine import check_transition

Step = Callable[[Ledger, str, str], object]


def _status(status: str) -> Step:
    return lambda ledger, key, run: ledger.set_status(key, run, status)


def _fail(ledger: Ledger, key: str, run: str) -> None:
    ledger.fail(key, run, 400400, "refused", request_id="req-x")


def _restart(ledger: Ledger, key: str, run: str) -> None:
    ledger.restart(key, run, "video deleted by the flow")


def _requeue(ledger: Ledger, key: str, run: str) -> None:
    ledger.requeue_failed(run, keys=[key], include_service_errors=True)


# (from, to) -> (how to set up `from`, how to perform the transition). Setup names a state for drive(), or
# "failed@<origin>" for an item that failed while in origin.
CASES: dict[tuple[str, str], tuple[str, Step]] = {
    ("planned", "creating"): ("planned", lambda lg, k, r: lg.begin_create(k, r, "Title")),
    ("planned", "failed"): ("planned", _fail),
    ("creating", "uploading"): (
        "creating",
        lambda lg, k, r: lg.create_started_upload(k, r, "v-new", ENDPOINT, 1000, request_id="req-1"),
    ),
    ("creating", "processing"): ("creating", lambda lg, k, r: lg.create_accepted(k, r, "v-new", "req-1")),
    ("creating", "done"): ("creating", lambda lg, k, r: lg.adopt(k, r, "v-new", "done")),
    ("creating", "error"): ("creating", lambda lg, k, r: lg.adopt(k, r, "v-new", "error")),
    ("creating", "aborted"): ("creating", lambda lg, k, r: lg.adopt(k, r, "v-new", "aborted")),
    ("creating", "planned"): ("creating", lambda lg, k, r: lg.reconcile_none(k, r)),
    ("creating", "failed"): ("creating", _fail),
    ("uploading", "uploading"): ("uploading", _status("uploading")),
    ("uploading", "uploaded"): ("uploading", lambda lg, k, r: lg.upload_complete(k, r)),
    ("uploading", "processing"): ("uploading", _status("pre-processing")),
    ("uploading", "done"): ("uploading", _status("done")),
    ("uploading", "error"): ("uploading", _status("error")),
    ("uploading", "aborted"): ("uploading", _status("aborted")),
    ("uploading", "failed"): ("uploading", _fail),
    ("uploading", "planned"): ("uploading", _restart),
    ("uploaded", "processing"): ("uploaded", _status("pending")),
    ("uploaded", "done"): ("uploaded", _status("done")),
    ("uploaded", "error"): ("uploaded", _status("error")),
    ("uploaded", "aborted"): ("uploaded", _status("aborted")),
    ("uploaded", "failed"): ("uploaded", _fail),
    ("uploaded", "planned"): ("uploaded", _restart),
    ("processing", "processing"): ("processing", _status("pre-processing")),
    ("processing", "done"): ("processing", _status("done")),
    ("processing", "error"): ("processing", _status("error")),
    ("processing", "aborted"): ("processing", _status("aborted")),
    ("processing", "failed"): ("processing", _fail),
    ("processing", "planned"): ("processing", _restart),
    ("done", "finished"): ("done", lambda lg, k, r: lg.finished(k, r)),
    ("done", "failed"): ("done", _fail),
    ("failed", "planned"): ("failed@planned", _requeue),
    ("failed", "uploading"): ("failed@uploading", _requeue),
    ("failed", "uploaded"): ("failed@uploaded", _requeue),
    ("failed", "processing"): ("failed@processing", _requeue),
    ("failed", "done"): ("failed@done", _requeue),
    ("error", "planned"): ("error", _requeue),
    ("aborted", "planned"): ("aborted", _restart),
}


def test_cases_cover_exactly_the_transition_table() -> None:
    allowed = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert set(CASES) == allowed


def _setup(ledger: Ledger, key: str, setup: str, run: str) -> None:
    if setup.startswith("failed@"):
        failed_from(ledger, key, setup.split("@", 1)[1], run)
    else:
        drive(ledger, key, setup, run)


@pytest.mark.parametrize(("pair"), sorted(CASES), ids=lambda p: f"{p[0]}->{p[1]}")
def test_allowed_transition(ledger: Ledger, run_id: str, pair: tuple[str, str]) -> None:
    from_state, to_state = pair
    setup, step = CASES[pair]
    _setup(ledger, "k", setup, run_id)
    before = ledger.get("k")
    assert before is not None and before.state == from_state
    events_before = len(ledger.events("k"))

    step(ledger, "k", run_id)

    after = ledger.get("k")
    assert after is not None and after.state == to_state
    assert after.last_run == run_id
    events = ledger.events("k")
    assert len(events) == events_before + 1
    assert (events[-1].from_state, events[-1].to_state, events[-1].run_id) == (from_state, to_state, run_id)
    assert events[-1].kind == "transition"


def test_transition_data_travels_with_the_state(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "k", "creating", run_id)
    ledger.create_started_upload("k", run_id, "vid-9", ENDPOINT, 4096, request_id="req-init")
    item = ledger.get("k")
    assert item is not None
    assert (item.video_id, item.upload_endpoint, item.bytes_total, item.upload_offset) == (
        "vid-9",
        ENDPOINT,
        4096,
        0,
    )
    assert ledger.events("k")[-1].request_id == "req-init"
    assert ledger.record_offset("k", 2048) == 2048
    assert ledger.record_offset("k", 1024) == 2048  # monotonic unless told
    assert ledger.record_offset("k", 1024, allow_decrease=True) == 1024
    assert len([e for e in ledger.events("k") if e.from_state == e.to_state == "uploading"]) == 0
    ledger.upload_complete("k", run_id)
    item = ledger.get("k")
    assert item is not None and item.upload_offset == 4096 and item.upload_endpoint is None


def test_done_stamps_done_at_and_finished_clears_meta_pending(ledger: Ledger, run_id: str) -> None:
    ledger.plan([spec("k", tags=["a"])], run_id)
    drive(ledger, "k", "done", run_id)
    item = ledger.get("k")
    assert item is not None and item.done_at is not None and item.meta_pending
    ledger.finished("k", run_id)
    item = ledger.get("k")
    assert item is not None and item.finished_at is not None and not item.meta_pending


@pytest.mark.parametrize(("from_state", "to_state"), [(a, b) for a, b in product(STATES, STATES)])
def test_table_rejects_every_pair_it_does_not_list(from_state: str, to_state: str) -> None:
    if to_state in TRANSITIONS[from_state]:
        check_transition("k", from_state, to_state)
        return
    with pytest.raises(InvalidTransition) as caught:
        check_transition("k", from_state, to_state)
    assert "'k'" in str(caught.value) and from_state in str(caught.value) and to_state in str(caught.value)


@pytest.mark.parametrize(
    ("setup", "attempt", "target"),
    [
        ("planned", lambda lg, k, r: lg.upload_complete(k, r), "uploaded"),
        ("processing", lambda lg, k, r: lg.finished(k, r), "finished"),
        ("finished", _fail, "failed"),
        ("creating", lambda lg, k, r: lg.begin_create(k, r, "again"), "creating"),
        ("done", _status("processing"), "processing"),
        ("planned", _restart, "planned"),
        ("creating", _restart, "planned"),
    ],
)
def test_rejected_transition_changes_nothing(
    ledger: Ledger, run_id: str, setup: str, attempt: Step, target: str
) -> None:
    drive(ledger, "k", setup, run_id)
    before, journal = ledger.get("k"), ledger.events("k")
    with pytest.raises(InvalidTransition) as caught:
        attempt(ledger, "k", run_id)
    assert caught.value.key == "k"
    assert (caught.value.from_state, caught.value.to_state) == (setup, target)
    assert ledger.get("k") == before
    assert ledger.events("k") == journal


def test_offset_only_while_uploading(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "k", "uploaded", run_id)
    with pytest.raises(InvalidTransition):
        ledger.record_offset("k", 10)
    drive(ledger, "k2", "uploading", run_id, size=100)
    with pytest.raises(ValueError, match="beyond"):
        ledger.record_offset("k2", 101)


def test_unknown_key(ledger: Ledger, run_id: str) -> None:
    with pytest.raises(UnknownItem):
        ledger.begin_create("missing", run_id, "x")
    assert ledger.get("missing") is None


def test_status_mapping_and_no_event_without_change(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "k", "uploaded", run_id)
    assert ledger.set_status("k", run_id, "pre-processing") == "processing"
    count = len(ledger.events("k"))
    assert ledger.set_status("k", run_id, "pre-processing") == "processing"
    assert len(ledger.events("k")) == count
    assert ledger.set_status("k", run_id, "some-new-status") == "processing"  # unknown: still waiting
    assert ledger.set_status("k", run_id, "error", message="decode failed") == "error"
    item = ledger.get("k")
    assert item is not None and item.error_code == "video_error" and item.error_message == "decode failed"


def test_uploading_status_while_our_upload_runs_stays_uploading(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "k", "uploading", run_id)
    assert ledger.set_status("k", run_id, "pending") == "uploading"
    assert ledger.set_status("k", run_id, "uploading") == "uploading"
    item = ledger.get("k")
    assert item is not None and item.status == "uploading" and item.upload_endpoint == endpoint_for("k")


def test_requeue_resumes_where_it_failed(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "up", "uploading", run_id)
    ledger.record_offset("up", 600)
    ledger.fail("up", run_id, "source_unreadable", "read error")
    failed_from(ledger, "pl", "planned", run_id)
    failed_from(ledger, "dn", "done", run_id)
    drive(ledger, "er", "error", run_id)
    up = ledger.get("up")
    assert up is not None and up.failed_from == "uploading" and up.upload_endpoint == endpoint_for("up")

    assert ledger.requeue_failed(run_id) == {"uploading": 1, "planned": 1, "done": 1}
    up = ledger.get("up")
    assert up is not None
    assert (up.state, up.video_id, up.upload_endpoint, up.upload_offset, up.error_code) == (
        "uploading",
        "vid-up",
        endpoint_for("up"),
        600,
        None,
    )
    assert up.attempts == 2
    assert ledger.get("er").state == "error"  # type: ignore[union-attr]  # service errors only on request
    assert ledger.requeue_failed(run_id, include_service_errors=True) == {"planned": 1}
    er = ledger.get("er")
    assert er is not None and er.state == "planned" and er.video_id is None
    assert "vid-er" in (ledger.events("er")[-1].message or "")


def test_adopt_follows_the_status_and_via(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "tus", "creating", run_id)
    drive(ledger, "url", "creating", run_id, via="url")
    assert ledger.adopt("tus", run_id, "v-tus", "pending") == "uploading"
    assert ledger.adopt("url", run_id, "v-url", "uploading") == "processing"
    tus = ledger.get("tus")
    assert tus is not None and tus.upload_endpoint is None and tus.video_id == "v-tus"
    assert "reconcile" in (ledger.events("tus")[-1].message or "")
