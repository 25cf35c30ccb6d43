"""Reports never show the endpoint; summary, reconcile queries, batch statuses and operations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.state.helpers import ENDPOINT, drive, endpoint_for, failed_from, spec
from videoferry.state import InvalidTransition, Ledger, LedgerError
from videoferry.state.applied import UNIT_OWNER


def test_report_rows_never_contain_the_endpoint(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "up", "uploading", run_id)
    failed_from(ledger, "fl", "uploading", run_id)
    rows = ledger.report_rows()
    assert len(rows) == 2
    assert all("upload_endpoint" not in r for r in rows)
    assert ENDPOINT not in repr(rows)
    assert ENDPOINT in (ledger.get("up").upload_endpoint or "")  # type: ignore[union-attr]  # kept for resume
    assert ENDPOINT not in repr(ledger.get("up"))
    assert ENDPOINT not in repr(ledger.items()) and ENDPOINT not in repr(ledger.events())
    assert ENDPOINT not in repr(ledger.summary())


def test_messages_are_scrubbed_of_the_endpoint(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "k", "uploading", run_id)
    ledger.note("k", run_id, f"PATCH {endpoint_for('k')} timed out", kind="retry", error_code="timeout")
    ledger.fail("k", run_id, "tus_409", f"offset mismatch at {endpoint_for('k')}")
    item = ledger.get("k")
    assert item is not None and item.error_message is not None
    assert ENDPOINT not in item.error_message and "<upload endpoint>" in item.error_message
    assert all(ENDPOINT not in (e.message or "") for e in ledger.events("k"))


def test_summary(ledger: Ledger, run_id: str) -> None:
    ledger.plan([spec(k, n, via="tus", source_size=1000) for n, k in enumerate("abcde")], run_id)
    drive(ledger, "a", "finished", run_id)
    drive(ledger, "b", "uploading", run_id)
    ledger.record_offset("b", 400)
    drive(ledger, "c", "error", run_id)
    ledger.fail("d", run_id, 400400, "bad title")
    ledger.note("b", run_id, "PATCH retried", kind="retry", error_code=500500)
    summary = ledger.summary(run_id)
    assert summary["items"] == 5
    assert summary["counts"]["finished"] == 1 and summary["counts"]["planned"] == 1
    assert summary["complete"] == 1
    assert summary["bytes_total"] == 5000
    assert summary["bytes_uploaded"] == 1000 + 400 + 1000  # finished, partial, uploaded-then-error
    assert summary["error_codes"] == {"400400": 1, "video_error": 1}
    assert summary["attempts"] == 3 and summary["retries"] == 1
    assert summary["first_event_at"] <= summary["last_event_at"]
    assert summary["throughput_bytes_per_second"] is not None and summary["throughput_bytes_per_second"] > 0
    assert ledger.summary("no-such-run")["retries"] == 0


def test_summary_counts_the_bytes_of_upload_ends_and_single_creates_only(ledger: Ledger, run_id: str) -> None:
    """bytes_transferred: tus uploads that ended and single-request creates; a URL import sends nothing."""
    drive(ledger, "tus", "uploaded", run_id, size=1000)
    for key, via, size in (("single", "single", 200), ("url", "url", 30)):
        ledger.plan([spec(key, via=via, source_size=size)], run_id)
        ledger.begin_create(key, run_id, f"Title {key}")
        ledger.create_accepted(key, run_id, f"vid-{key}")
    drive(ledger, "open", "uploading", run_id, size=5000)
    for scope in (run_id, None):
        assert ledger.summary(scope)["bytes_transferred"] == 1000 + 200


def test_summary_lists_each_warning_once_oldest_first(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "b", "planned", run_id)
    drive(ledger, "a", "planned", run_id)
    for key, message in (("b", "title cut"), ("a", "title cut"), ("b", "title cut"), ("b", "tags tidied")):
        ledger.note(key, run_id, message, kind="warning")
    ledger.note("a", run_id, "not a warning")
    assert ledger.summary()["warnings"] == [
        {"key": "b", "message": "title cut"},
        {"key": "a", "message": "title cut"},
        {"key": "b", "message": "tags tidied"},
    ]


def test_summary_follows_every_change_of_the_file(ledger: Ledger, ledger_path: Path, run_id: str) -> None:
    """What summary() keeps of the ledger now is read again after a write of its own or another's."""
    drive(ledger, "a", "planned", run_id)
    assert ledger.summary()["counts"]["planned"] == ledger.summary(run_id)["counts"]["planned"] == 1
    ledger.begin_create("a", run_id, "Title a")  # this connection's write
    assert ledger.summary(run_id)["counts"]["creating"] == 1 and ledger.summary()["attempts"] == 1
    ledger.fail("a", run_id, "bad", "refused")
    assert ledger.summary()["error_codes"] == {"bad": 1}
    other = Ledger.open(ledger_path)  # another connection (another process would do the same)
    try:
        other.plan([spec("b", 2)], None)
        other.note("b", None, "title cut", kind="warning")
    finally:
        other.close()
    summary = ledger.summary()
    assert summary["items"] == 2 and summary["counts"]["planned"] == 1
    assert summary["warnings"] == [{"key": "b", "message": "title cut"}]
    summary["counts"]["planned"] = 99  # a caller's copy: what is kept stays as it was
    summary["warnings"].clear()
    again = ledger.summary(run_id)
    assert again["counts"]["planned"] == 1 and len(again["warnings"]) == 1


def test_counts_list_every_state(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "k", "creating", run_id)
    counts = ledger.counts()
    assert counts["creating"] == 1 and sum(counts.values()) == 1 and "aborted" in counts


def test_creating_items_and_claimed_videos(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "late", "planned", run_id)
    drive(ledger, "early", "creating", run_id)
    ledger.begin_create("late", run_id, "Late")
    drive(ledger, "owner", "uploading", run_id)
    assert [i.key for i in ledger.creating_items()] == ["early", "late"]
    assert ledger.keys_for_videos(["vid-owner", "v-unknown"]) == {"vid-owner": "owner"}
    with pytest.raises(LedgerError, match="already belongs"):
        ledger.adopt("early", run_id, "vid-owner", "done")
    assert ledger.get("early").state == "creating"  # type: ignore[union-attr]
    ledger.reconcile_none("late", run_id)
    late = ledger.get("late")
    assert late is not None and late.state == "planned" and late.created_intent_at is None


def test_apply_statuses_touches_only_watched_items(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "up", "uploaded", run_id)
    drive(ledger, "pr", "processing", run_id)
    drive(ledger, "dn", "done", run_id)
    drive(ledger, "ing", "uploading", run_id)
    changes = ledger.apply_statuses(
        run_id,
        {
            "vid-up": "processing",
            "vid-pr": "done",
            "vid-dn": "error",
            "vid-ing": "uploading",
            "stranger": "done",
        },
    )
    assert sorted(changes) == [("pr", "processing", "done"), ("up", "uploaded", "processing")]
    assert ledger.get("dn").state == "done"  # type: ignore[union-attr]
    assert ledger.get("ing").state == "uploading"  # type: ignore[union-attr]


def test_operations_intent_then_outcome(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "k", "done", run_id)
    op = ledger.record_op_intent(
        "k", "copy", {"parent_id": "p1", "token": "T"}, run_id=run_id, op_key="copy-k"
    )
    stored = ledger.get_op(op)
    assert stored is not None and stored.status == "intent" and stored.params == {"parent_id": "p1"}
    assert [o.op_id for o in ledger.pending_ops()] == [op]
    with pytest.raises(InvalidTransition, match="unknown outcome"):
        ledger.record_op_intent("k", "copy", {"parent_id": "p1"}, run_id=run_id, op_key="copy-k")
    ledger.record_op_outcome(op, "done", {"video_id": "copy-1"}, request_id="req-9")
    stored = ledger.get_op(op)
    assert stored is not None and stored.result == {"video_id": "copy-1"} and stored.outcome_at is not None
    with pytest.raises(InvalidTransition):
        ledger.record_op_outcome(op, "failed")
    assert ledger.pending_ops() == []
    op_events = [e for e in ledger.events("k") if e.kind == "op"]
    assert [(e.from_state, e.to_state) for e in op_events] == [(None, "intent"), ("intent", "done")]
    assert op_events[-1].request_id == "req-9"


def test_cut_needs_the_before_snapshot(ledger: Ledger, run_id: str) -> None:
    with pytest.raises(ValueError, match="version"):
        ledger.record_op_intent("k", "cut", {"trim": [{"start": 0, "length": 5}]}, video_id="v")
    before = {"version": 3, "updated_at": "2026-01-01T00:00:00Z", "duration": 60.0}
    op = ledger.record_op_intent(
        None, "cut", {"trim": [{"start": 0, "length": 5}]}, video_id="v", before=before, run_id=run_id
    )
    ledger.record_op_outcome(op, "void", error_code="reconcile_unchanged")
    stored = ledger.get_op(op)
    assert stored is not None and stored.before == before and stored.status == "void"
    assert [o.op_id for o in ledger.ops(kind="cut")] == [op]
    with pytest.raises(ValueError, match="unknown operation"):
        ledger.record_op_intent("k", "explode", {})


def test_operations_name_their_target_and_what_they_created(ledger: Ledger, run_id: str) -> None:
    on_video = ledger.record_op_intent("k", "copy", {}, run_id=run_id, video_id="v1")
    stored = ledger.get_op(on_video)
    assert stored is not None and (stored.target_kind, stored.target_id, stored.video_id) == (
        "video",
        "v1",
        "v1",
    )
    archive = ledger.record_op_intent(
        None, "archive", {"title": "Talk"}, run_id=run_id, target_kind="live_event", target_id="le-1"
    )
    with pytest.raises(ValueError, match="done"):
        ledger.record_op_outcome(archive, "failed", created_id="v-made")
    ledger.record_op_outcome(archive, "done", {"id": "v-made"}, created_id="v-made", request_id="req-a")
    made = ledger.get_op(archive)
    assert made is not None and made.video_id is None
    assert (made.target_kind, made.target_id, made.created_kind, made.created_id) == (
        "live_event",
        "le-1",
        "video",
        "v-made",
    )
    assert [o.op_id for o in ledger.ops(target_id="le-1")] == [archive]
    messages = [e.message for e in ledger.events() if e.op_id == archive]
    assert messages == ["archive intent on live_event le-1", "archive done (created video v-made)"]
    drop = ledger.record_op_intent(None, "delete_recording", {}, target_kind="stream", target_id="s-1")
    ledger.record_op_outcome(drop, "void")
    assert ledger.get_op(drop).status == "void"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "target",
    [
        {"target_kind": "playlist", "target_id": "p"},
        {"target_id": "p"},
        {"video_id": "v", "target_kind": "stream", "target_id": "v"},
        {"video_id": "v", "target_id": "w"},
    ],
)
def test_bad_operation_targets_are_refused(ledger: Ledger, target: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ledger.record_op_intent(None, "delete", {}, **target)
    assert ledger.ops() == []


def test_video_owners_are_found_through_the_indexes(ledger: Ledger, run_id: str) -> None:
    """An item's video is owned by its key, a video an operation created by that unit; a live event an
    operation created is no video's owner. Both lookups search an index (by created_id alone, the
    operations were scanned once per 500 videos: a check of a large library against many operations)."""
    drive(ledger, "k", "done", run_id)
    copy = ledger.record_op_intent("k", "copy", {}, run_id=run_id, op_key="copy-k", video_id="v-src")
    ledger.record_op_outcome(copy, "done", {}, run_id=run_id, created_id="v-copy")
    event = ledger.record_op_intent(None, "create_event", {}, run_id=run_id, op_key="event-e")
    ledger.record_op_outcome(event, "done", {}, run_id=run_id, created_id="v-twin", created_kind="live_event")
    video_of_k = ledger.get("k").video_id  # type: ignore[union-attr]
    assert video_of_k
    owners = ledger.video_owners([video_of_k, "v-copy", "v-twin", "v-none"])
    assert owners == {video_of_k: "k", "v-copy": UNIT_OWNER + "copy-k"}
    conn = ledger._db.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        ledger.video_owners([f"v-{n}" for n in range(20)])
    finally:
        conn.set_trace_callback(None)
    plans = [
        str(r[-1])
        for s in statements
        if s.lstrip().startswith("SELECT")
        for r in conn.execute(f"EXPLAIN QUERY PLAN {s}")
    ]
    assert len(plans) == 2 and all(p.startswith("SEARCH") for p in plans), plans
