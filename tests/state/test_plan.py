"""plan(): upsert by key, done items untouched, in-flight identity kept, row normalisation, 100k rows."""

from __future__ import annotations

import pytest

from state import Chapter, Ledger, RowError
from tests.state.helpers import drive, row


def test_first_plan_adds_and_journals(ledger: Ledger, run_id: str) -> None:
    result = ledger.plan([row("a", 1), row("b", 2)], run_id)
    assert (result.added, result.updated, result.unchanged, result.already_done) == (2, 0, 0, 0)
    item = ledger.get("a")
    assert item is not None
    assert (item.state, item.row, item.first_seen_run, item.last_run) == ("planned", 1, run_id, run_id)
    (event,) = ledger.events("a")
    assert (event.from_state, event.to_state, event.run_id) == (None, "planned", run_id)


def test_rerun_counts_unchanged_updated_and_done(ledger: Ledger, run_id: str) -> None:
    ledger.plan([row("same"), row("changed"), row("done")], run_id)
    drive(ledger, "done", "done", run_id)
    result = ledger.plan(
        [
            row("same"),
            row("changed", title="New title", tags="x; y"),
            row("done", title="ignored"),
            row("new"),
        ],
        run_id,
    )
    assert (result.added, result.updated, result.unchanged, result.already_done) == (1, 1, 1, 1)
    changed = ledger.get("changed")
    assert changed is not None and changed.title == "New title" and changed.tags == ("x", "y")
    assert changed.meta_pending
    done = ledger.get("done")
    assert done is not None and done.title == "Title done" and done.state == "done"
    assert "changed: title, tags" in (ledger.events("changed")[-1].message or "")


def test_done_items_are_not_written_at_all(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "d", "finished", run_id)
    before, journal = ledger.get("d"), ledger.events("d")
    ledger.plan([row("d", 99, source="/elsewhere.mp4", title="other")], "another-run")
    assert ledger.get("d") == before
    assert ledger.events("d") == journal


def test_identity_change_applies_only_before_a_video_exists(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "free", "planned", run_id)
    drive(ledger, "busy", "uploading", run_id)
    drive(ledger, "unsure", "creating", run_id)
    result = ledger.plan(
        [
            row("free", source="/new/free.mp4", via="tus", source_size=1000),
            row("busy", source="/new/busy.mp4", via="tus", source_size=1000, title="Renamed"),
            row("unsure", source="/new/unsure.mp4", via="tus", source_size=1000),
        ],
        run_id,
    )
    assert result.updated == 1 and set(result.conflicts) == {"busy", "unsure"}
    assert ledger.get("free").source == "/new/free.mp4"  # type: ignore[union-attr]
    busy = ledger.get("busy")
    assert busy is not None and busy.source == "/videos/busy.mp4" and busy.title == "Renamed"
    assert busy.meta_pending  # the new title must be applied by the finish step
    assert ledger.get("unsure").source == "/videos/unsure.mp4"  # type: ignore[union-attr]
    assert any("not applied: source" in (e.message or "") for e in ledger.events("busy"))


def test_duplicate_keys_keep_the_first_row(ledger: Ledger, run_id: str) -> None:
    result = ledger.plan([row("a", 1, title="first"), row("a", 2, title="second")], run_id)
    assert result.added == 1 and result.duplicates == ("a",)
    assert ledger.get("a").title == "first"  # type: ignore[union-attr]


def test_list_columns_are_normalised(ledger: Ledger, run_id: str) -> None:
    ledger.plan(
        [
            row(
                "json",
                tags='["a", "b"]',
                chapters='[{"time": 10, "title": "Intro"}]',
                privacy_domains="x.org",
            ),
            row("semi", tags="a;  ;b", chapters=[(0, "Start"), {"time": 90.5, "title": "End"}]),
            row("custom", privacy_type="custom", privacy_domains=["a.example", "b.example"]),
        ],
        run_id,
    )
    json_item, semi, custom = (ledger.get(k) for k in ("json", "semi", "custom"))
    assert json_item is not None and semi is not None and custom is not None
    assert json_item.tags == semi.tags == ("a", "b")
    assert json_item.chapters == (Chapter(10.0, "Intro"),)
    assert semi.chapters == (Chapter(0.0, "Start"), Chapter(90.5, "End"))
    assert json_item.privacy_domains == ("x.org",)
    assert custom.privacy_type == "custom" and custom.privacy_domains == ("a.example", "b.example")


@pytest.mark.parametrize(
    "bad",
    [
        {"row": 3, "source": "/x.mp4"},
        {"key": "k", "row": 3},
        {"key": "k", "source": "/x.mp4", "via": "ftp"},
        {"key": "k", "source": "/x.mp4", "chapters": [{"time": "soon", "title": "x"}]},
        {"key": "k", "source": "/x.mp4", "privacy_type": "secret-ish"},
        {"key": "k", "source": "/x.mp4", "tags": "[not json"},
    ],
)
def test_bad_row_aborts_the_whole_plan(ledger: Ledger, run_id: str, bad: dict[str, object]) -> None:
    with pytest.raises(RowError) as caught:
        ledger.plan([row("good", 1), bad], run_id)
    assert "row" in str(caught.value)
    assert ledger.get("good") is None


def test_hundred_thousand_rows(ledger: Ledger, run_id: str) -> None:
    rows = (
        {"key": f"k{i:06d}", "row": i, "source": f"s3://bucket/v/{i}.mp4", "title": f"V {i}"}
        for i in range(100_000)
    )
    result = ledger.plan(rows, run_id)
    assert result.added == 100_000 and result.total == 100_000
    assert ledger.counts()["planned"] == 100_000
    drive(ledger, "k000007", "done", run_id, size=10)
    again = ledger.plan(
        (
            {"key": f"k{i:06d}", "row": i, "source": f"s3://bucket/v/{i}.mp4", "title": f"V {i}"}
            for i in range(100_000)
        ),
        run_id,
    )
    assert (again.added, again.updated, again.unchanged, again.already_done) == (0, 0, 99_999, 1)
    assert ledger.pending_keys(["planned"], limit=3) == ["k000000", "k000001", "k000002"]


def test_a_url_signed_again_updates_the_source_of_an_item_with_a_video(ledger: Ledger, run_id: str) -> None:
    signed = "https://cdn.example/v/talk.mp4?sig=old&exp=1"
    ledger.plan([row("u", source=signed, via="url")], run_id)
    drive(ledger, "u", "processing", run_id, via="url")
    result = ledger.plan([row("u", source="https://cdn.example/v/talk.mp4?sig=new&exp=2", via="url")], run_id)
    assert not result.conflicts
    item = ledger.get("u")
    assert item is not None and item.source.endswith("sig=new&exp=2") and item.state == "processing"
    moved = ledger.plan([row("u", source="https://cdn.example/v/other.mp4?sig=new", via="url")], run_id)
    assert moved.conflicts == ("u",)  # another path is another object: not applied
