"""The chaos checks themselves: the window counter, the counted requests and the duplicate check can fail."""

from __future__ import annotations

import random
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.checks import (
    PAUSE_AFTER_429,
    RateFigures,
    assert_settled,
    attribute_videos,
    counted_requests,
    items_so_far,
    max_in_window,
    rate_figures_of,
)
from tests.chaos.harness import REFUSALS, SETUP_ONLY, draw_variants, shared_groups
from tests.state.helpers import spec
from videoferry.emulator.variants import EXCLUSIVE, VARIANTS
from videoferry.state import Ledger


def test_max_in_window_counts_half_open_windows() -> None:
    assert max_in_window([], 1.0) == 0
    assert max_in_window([0.0, 0.5, 0.999, 1.0, 1.5], 1.0) == 3  # [0.5, 1.5) holds 0.5, 0.999, 1.0
    assert max_in_window([5.0, 1.0, 1.2, 3.0], 1.0) == 2  # unsorted input
    assert max_in_window([0.1 * i for i in range(11)], 1.0) == 10  # 0.0 .. 1.0: 1.0 starts a new window
    assert max_in_window([0.099 * i for i in range(11)], 1.0) == 11


def test_eleven_calls_in_a_second_fail_the_check() -> None:
    RateFigures(calls=10, per_second=10, per_minute=300, refused_429=0).assert_inside_limits()
    with pytest.raises(AssertionError, match="11 counted requests in one second"):
        RateFigures(calls=11, per_second=11, per_minute=11, refused_429=0).assert_inside_limits()
    with pytest.raises(AssertionError, match="301 counted requests in one minute"):
        RateFigures(calls=301, per_second=10, per_minute=301, refused_429=0).assert_inside_limits()


def _api(t: float, status: int = 200) -> dict[str, Any]:
    return {"time": t, "host": "api", "method": "GET", "path": "/v1/videos", "status": status}


def _upload(t: float, status: int = 204) -> dict[str, Any]:
    return {"time": t, "host": "upload", "method": "PATCH", "path": "/upload/s3cr3t", "status": status}


def _init(t: float) -> dict[str, Any]:
    return {"time": t, "host": "upload", "method": "POST", "path": "/v2/init", "status": 201}


def test_upload_requests_count_once_each_run_could_know() -> None:
    learned = 100.0 + PAUSE_AFTER_429
    log = [
        _init(99.0),
        *(_upload(99.5 + 0.01 * i) for i in range(20)),  # before anyone knew: not API calls by the spec
        _upload(100.0, 429),  # the first 429 of an upload address: the client knows from now on
        *(_upload(learned + 0.05 * i) for i in range(6)),
        *(_api(learned + 0.5 + 0.05 * i) for i in range(5)),
        *(_upload(200.0 + 0.01 * i) for i in range(30)),  # a new run (a new process) must learn again
    ]
    assert [r["time"] for r in counted_requests(log)] == [99.0] + [learned + 0.5 + 0.05 * i for i in range(5)]
    counted = counted_requests(log, uploads_counted=True, runs=[90.0, 200.0])
    assert len(counted) == 1 + 6 + 5
    figures = rate_figures_of(log, uploads_counted=True, runs=[90.0, 200.0])
    assert (figures.per_second, figures.uploads) == (11, 6)
    with pytest.raises(AssertionError, match="11 counted requests in one second"):
        figures.assert_inside_limits()
    rate_figures_of(log, runs=[90.0, 200.0]).assert_inside_limits()  # a service that does not count them


def test_videos_map_to_items_by_id_then_bytes_then_the_title_the_create_sent(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "ledger.db")
    try:
        run = ledger.start_run("test")
        specs = [spec(k, n, source=f"/v/{k}.mp4", title="Introduction") for n, k in enumerate("abc")]
        ledger.plan(specs, run)
        for key in "abc":
            ledger.begin_create(key, run, "Introduction")  # b and c: outcome unknown, the same title sent
        video_a = str(uuid.uuid4())
        ledger.create_accepted("a", run, video_a, status="uploading")
        items = ledger.items()
    finally:
        ledger.close()
    md5s = {f"/v/{k}.mp4": k * 32 for k in "abc"}

    def video(title: str, md5: str | None = None, vid: str | None = None) -> dict[str, Any]:
        return {"id": vid or str(uuid.uuid4()), "title": title, "status": "uploading", "md5": md5}

    a_undashed = video("Introduction", vid=video_a.replace("-", ""))  # the recorded id in another notation
    pending = [video("Introduction"), video("Introduction")]  # no bytes yet: by the title its create sent
    per_item, stray = attribute_videos([a_undashed, *pending], items, md5s)
    assert ({k: len(v) for k, v in per_item.items()}, stray) == ({"a": 1, "b": 1, "c": 1}, [])

    per_item, _ = attribute_videos([a_undashed, video("Intro (2)", md5="a" * 32)], items, md5s)
    assert len(per_item["a"]) == 2  # another video holding a's bytes is a's duplicate, whatever its title
    per_item, _ = attribute_videos([*pending, video("Introduction", md5="c" * 32)], items, md5s)
    assert sorted(len(v) for v in per_item.values()) == [1, 2]  # three videos for b and c: one is doubled
    _, stray = attribute_videos([video("Something else")], items, md5s)
    assert len(stray) == 1


def test_variant_draws_keep_the_exclusions_and_shared_groups_their_sizes() -> None:
    for seed in range(1, 200):
        chosen, params = draw_variants(seed)
        assert all(len(set(chosen) & set(group)) <= 1 for group in EXCLUSIVE), chosen
        assert 2.0 <= params["endpoint_ttl_seconds"] <= 5.0
    drawn = {name for seed in range(1, 60) for name in draw_variants(seed)[0]}
    assert drawn == set(VARIANTS) - SETUP_ONLY - REFUSALS
    groups = shared_groups(random.Random(3), 50)
    assert len(groups) >= 2 and all(2 <= len(g) <= 4 for g in groups)
    assert len({i for g in groups for i in g}) == sum(len(g) for g in groups)


def test_only_a_postponed_lookup_may_leave_an_item_in_creating(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = Ledger.open(path)
    try:
        run = ledger.start_run("test")
        ledger.plan([spec("a", 1), spec("b", 2)], run)
        ledger.begin_create("a", run, "Title a")
        ledger.note("a", run, "reconcile postponed: listing answered 503")  # the documented limit
        ledger.fail("b", run, "create_attempts", "no video after 3 create attempts")
    finally:
        ledger.close()
    assert assert_settled(path) == {"creating": 1, "failed": 1}
    ledger = Ledger.open(path)
    try:
        run = ledger.start_run("test")
        ledger.plan([spec("c", 3)], run)
        ledger.begin_create("c", run, "Title c")  # a create whose outcome nobody looked up
    finally:
        ledger.close()
    with pytest.raises(AssertionError, match=r"item \w+ \(row 3\) left in creating after 1 create attempts"):
        assert_settled(path)


def test_a_run_killed_before_its_ledger_exists_is_judged(tmp_path: Path) -> None:
    """No ledger (or one killed while its schema was being written) holds no item: every video is a stray."""
    missing = tmp_path / "never-made.db"
    assert items_so_far(missing) == []
    empty = tmp_path / "empty.db"
    empty.touch()
    assert items_so_far(empty) == []
    header_only = tmp_path / "header-only.db"
    with sqlite3.connect(header_only) as conn:
        conn.execute("PRAGMA journal_mode = WAL")  # what a run killed before its schema transaction leaves
    assert items_so_far(header_only) == []
    ledger = Ledger.open(tmp_path / "ledger.db")
    try:
        run = ledger.start_run("test")
        ledger.plan([spec("a", 1)], run)
    finally:
        ledger.close()
    assert [i.key for i in items_so_far(tmp_path / "ledger.db")] == ["a"]
    video = {"id": "v1", "title": "Title a", "md5": None}
    assert attribute_videos([video], items_so_far(missing), {}) == ({}, [video])
