"""plan(): upsert specs by key, done items untouched, in-flight identity kept, stored list form, 100k."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.state.helpers import drive, spec
from videoferry.core.item import Chapter, ItemSpec, PrivacyType, Via
from videoferry.state import Ledger, planning


def test_first_plan_adds_and_journals(ledger: Ledger, run_id: str) -> None:
    result = ledger.plan([spec("a", 1), spec("b", 2)], run_id)
    assert (result.added, result.updated, result.unchanged, result.already_done) == (2, 0, 0, 0)
    item = ledger.get("a")
    assert item is not None
    assert (item.state, item.spec.row, item.first_seen_run, item.last_run) == ("planned", 1, run_id, run_id)
    (event,) = ledger.events("a")
    assert (event.from_state, event.to_state, event.run_id) == (None, "planned", run_id)


def test_rerun_counts_unchanged_updated_and_done(ledger: Ledger, run_id: str) -> None:
    ledger.plan([spec("same"), spec("changed"), spec("done")], run_id)
    drive(ledger, "done", "done", run_id)
    result = ledger.plan(
        [
            spec("same"),
            spec("changed", title="New title", tags=["x", "y"]),
            spec("done", title="ignored"),
            spec("new"),
        ],
        run_id,
    )
    assert (result.added, result.updated, result.unchanged, result.already_done) == (1, 1, 1, 1)
    changed = ledger.get("changed")
    assert changed is not None and changed.spec.title == "New title" and changed.spec.tags == ("x", "y")
    assert changed.meta_pending
    done = ledger.get("done")
    assert done is not None and done.spec.title == "Title done" and done.state == "done"
    assert "changed: title, tags" in (ledger.events("changed")[-1].message or "")


def test_done_items_are_not_written_at_all(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "d", "finished", run_id)
    before, journal = ledger.get("d"), ledger.events("d")
    ledger.plan([spec("d", 99, source="/elsewhere.mp4", title="other")], "another-run")
    assert ledger.get("d") == before
    assert ledger.events("d") == journal


def test_identity_change_applies_only_before_a_video_exists(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "free", "planned", run_id)
    drive(ledger, "busy", "uploading", run_id)
    drive(ledger, "unsure", "creating", run_id)
    result = ledger.plan(
        [
            spec("free", source="/new/free.mp4", via="tus", source_size=1000),
            spec("busy", source="/new/busy.mp4", via="tus", source_size=1000, title="Renamed"),
            spec("unsure", source="/new/unsure.mp4", via="tus", source_size=1000),
        ],
        run_id,
    )
    assert result.updated == 1 and set(result.conflicts) == {"busy", "unsure"}
    assert ledger.get("free").spec.source == "/new/free.mp4"  # type: ignore[union-attr]
    busy = ledger.get("busy")
    assert busy is not None and busy.spec.source == "/videos/busy.mp4" and busy.spec.title == "Renamed"
    assert busy.meta_pending  # the new title must be applied by the finish step
    assert ledger.get("unsure").spec.source == "/videos/unsure.mp4"  # type: ignore[union-attr]
    assert any("not applied: source" in (e.message or "") for e in ledger.events("busy"))


def test_duplicate_keys_keep_the_first_spec(ledger: Ledger, run_id: str) -> None:
    result = ledger.plan([spec("a", 1, title="first"), spec("a", 2, title="second")], run_id)
    assert result.added == 1 and result.duplicates == ("a",)
    assert ledger.get("a").spec.title == "first"  # type: ignore[union-attr]


def test_specs_are_stored_as_they_are_in_canonical_list_form(
    ledger: Ledger, ledger_path: Path, run_id: str
) -> None:
    ledger.plan(
        [
            spec(
                "full",
                tags=["a", "é"],
                chapters=[(10, "Intro"), (90.5, "End")],
                privacy_type="custom",
                privacy_domains=["a.example", "b.example"],
                description="About",
                parent_id="p-1",
            ),
            spec("bare", description=""),
        ],
        run_id,
    )
    conn = sqlite3.connect(ledger_path)
    try:
        stored = conn.execute(
            "SELECT tags, chapters, privacy_type, privacy_domains, description, parent_id, via FROM items"
            " ORDER BY key"
        ).fetchall()
    finally:
        conn.close()
    assert stored == [
        (None, None, None, None, None, None, "tus"),
        (
            '["a","é"]',
            '[{"time":10.0,"title":"Intro"},{"time":90.5,"title":"End"}]',
            "custom",
            '["a.example","b.example"]',
            "About",
            "p-1",
            "tus",
        ),
    ]
    full, bare = ledger.get("full"), ledger.get("bare")
    assert full is not None and bare is not None
    assert full.spec == spec(
        "full",
        tags=["a", "é"],
        chapters=[(10, "Intro"), (90.5, "End")],
        privacy_type="custom",
        privacy_domains=["a.example", "b.example"],
        description="About",
        parent_id="p-1",
    )
    assert full.spec.chapters == (Chapter(10.0, "Intro"), Chapter(90.5, "End"))
    assert full.spec.privacy_type is PrivacyType.CUSTOM and full.meta_pending
    assert (bare.spec.parent_id, bare.spec.tags, bare.spec.description, bare.meta_pending) == (
        "",
        (),
        None,
        False,
    )
    again = ledger.plan([spec("bare", description="")], run_id)
    assert again.unchanged == 1  # "" and NULL are the same stored value


def test_an_older_ledgers_null_title_and_via_read_as_derived(
    ledger: Ledger, ledger_path: Path, run_id: str
) -> None:
    ledger.plan([spec("old", source="/videos/Talk.mp4")], run_id)
    conn = sqlite3.connect(ledger_path)
    conn.execute("UPDATE items SET title = NULL, via = NULL")
    conn.commit()
    conn.close()
    item = ledger.get("old")
    assert item is not None and (item.spec.title, item.spec.via) == ("Talk", Via.TUS)
    result = ledger.plan([spec("old", source="/videos/Talk.mp4", title="Talk")], run_id)
    assert result.unchanged == 1 and not result.conflicts
    renamed = ledger.plan([spec("old", source="/videos/Talk.mp4", title="A talk")], run_id)
    assert renamed.updated == 1


def test_the_key_comes_from_the_spec(ledger: Ledger, run_id: str) -> None:
    made = ItemSpec(key="abc", source="s3://b/x.mp4", parent_id="p", via=Via.URL, title="X", row=7)
    ledger.plan([made], run_id)
    item = ledger.get("abc")
    assert item is not None and item.key == "abc" and item.spec == made


def test_hundred_thousand_rows(ledger: Ledger, run_id: str) -> None:
    specs = (spec(f"k{i:06d}", i, source=f"s3://bucket/v/{i}.mp4", title=f"V {i}") for i in range(100_000))
    result = ledger.plan(specs, run_id)
    assert result.added == 100_000 and result.total == 100_000
    assert ledger.counts()["planned"] == 100_000
    drive(ledger, "k000007", "done", run_id, size=10)
    again = ledger.plan(
        (spec(f"k{i:06d}", i, source=f"s3://bucket/v/{i}.mp4", title=f"V {i}") for i in range(100_000)),
        run_id,
    )
    assert (again.added, again.updated, again.unchanged, again.already_done) == (0, 0, 99_999, 1)
    assert ledger.pending_keys(["planned"], limit=3) == ["k000000", "k000001", "k000002"]


def test_a_url_signed_again_updates_the_source_of_an_item_with_a_video(ledger: Ledger, run_id: str) -> None:
    signed = "https://cdn.example/v/talk.mp4?sig=old&exp=1"
    ledger.plan([spec("u", source=signed, via="url")], run_id)
    drive(ledger, "u", "processing", run_id, via="url")
    result = ledger.plan(
        [spec("u", source="https://cdn.example/v/talk.mp4?sig=new&exp=2", via="url")], run_id
    )
    assert not result.conflicts
    item = ledger.get("u")
    assert item is not None and item.spec.source.endswith("sig=new&exp=2") and item.state == "processing"
    moved = ledger.plan([spec("u", source="https://cdn.example/v/other.mp4?sig=new", via="url")], run_id)
    assert moved.conflicts == ("u",)  # another path is another object: not applied


def test_a_ledger_too_big_to_hold_in_memory_is_compared_batch_by_batch(
    ledger: Ledger, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    drive(ledger, "done", "finished", run_id)
    drive(ledger, "waiting", "planned", run_id)
    monkeypatch.setattr(planning, "_ALL_KEYS", 0)  # looked up in IN (...) batches, not read whole
    result = ledger.plan([spec("done"), spec("waiting", title="New"), spec("new"), spec("new")], run_id)
    assert (result.added, result.updated, result.already_done, result.duplicates) == (1, 1, 1, ("new",))
    waiting = ledger.get("waiting")
    assert waiting is not None and waiting.spec.title == "New"


def test_size_counts_items_and_bytes_as_the_summary_does(ledger: Ledger, run_id: str) -> None:
    drive(ledger, "a", "finished", run_id, size=1000)
    ledger.plan([spec("b", source_size=300), spec("c")], run_id)
    summary = ledger.summary()
    assert ledger.size() == (summary["items"], summary["bytes_total"]) == (3, 1300)
