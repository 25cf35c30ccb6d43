"""The careful baseline script's rules on the emulator: 429 waits, backoff, a lost answer looked up first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.careful import Outcome, Timing, migrate, workers_for
from tests.fixtures.media import ClipFactory
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = Timing(poll=0.05, pause_429=0.05, retry_pause=0.01, timeout=10.0)


def _run(ws: Workspace, files: list[Path]) -> list[Outcome]:
    return migrate(files, ws.base_url, ws.upload_url, ws.token, ws.project_id, FAST)


def _fault(control: EmulatorControl, ws: Workspace, **rule: Any) -> None:
    control.set_faults(ws, [rule], seed=1)


def test_clean_run_one_post_each_all_done(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: ClipFactory
) -> None:
    files = [clip_factory(0.5, name=f"c{i}.mp4") for i in range(5)]
    outcomes = _run(emu, files)
    assert [o.file for o in outcomes] == [f.name for f in files]
    assert all(o.status == "done" and o.posts == 1 and o.retries == 0 for o in outcomes), outcomes
    assert sorted(v["title"] for v in emu_control.videos(emu)) == sorted(f.stem for f in files)


def test_429_pauses_and_repeats_5xx_is_tried_again(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: ClipFactory
) -> None:
    emu_control.set_faults(
        emu,
        [
            {"kind": "rate_limit", "path": "^/v2/video$", "times": 2},
            {"kind": "error", "status": 503, "path": "^/v1/videos/", "times": 3},
        ],
        seed=1,
    )
    (outcome,) = _run(emu, [clip_factory(0.5)])
    assert outcome.status == "done", outcome
    assert (outcome.refused, outcome.retries, outcome.posts) == (2, 3, 3)
    assert len(emu_control.videos(emu)) == 1


def test_five_attempts_then_it_gives_up(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: ClipFactory
) -> None:
    _fault(emu_control, emu, kind="error", status=502, path="^/v1/videos/")
    (outcome,) = _run(emu, [clip_factory(0.5)])
    assert outcome.status == "failed"
    assert outcome.error == "5 attempts, last HTTP 502"
    assert (outcome.gets, outcome.retries) == (5, 4)


def test_a_lost_upload_answer_is_looked_up_not_sent_again(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: ClipFactory
) -> None:
    _fault(emu_control, emu, kind="drop_after_commit", path="^/v2/video$", times=1)
    clip = clip_factory(0.5)
    (outcome,) = _run(emu, [clip])
    assert outcome.status == "done" and (outcome.posts, outcome.lookups, outcome.found) == (1, 1, 1), outcome
    assert [v["title"] for v in emu_control.videos(emu)] == [clip.stem]  # the spec's lookup: no duplicate


def test_a_failed_upload_the_list_does_not_show_is_sent_again(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: ClipFactory
) -> None:
    _fault(emu_control, emu, kind="error", status=503, path="^/v2/video$", times=1)  # refused before a commit
    clip = clip_factory(0.5)
    (outcome,) = _run(emu, [clip])
    assert outcome.status == "done" and (outcome.posts, outcome.lookups, outcome.found) == (2, 1, 0), outcome
    assert [v["title"] for v in emu_control.videos(emu)] == [clip.stem]


def test_threads_follow_the_limits_and_backoff_doubles() -> None:
    assert workers_for(10, 300, 5.0) == 13  # 5 calls/s sustained, 2 calls per file over 5 s
    assert workers_for(30, 900, 5.0) == 38
    timing = Timing(retry_pause=1.0, max_pause=30.0)
    assert all(2 ** (n - 1) <= timing.backoff(1.0, n) <= 1.2 * 2 ** (n - 1) for n in (1, 2, 3, 4))
    assert 30.0 <= timing.backoff(1.0, 10) <= 36.0  # capped (with its jitter)


def test_a_4xx_is_not_retried(emu: Workspace, clip_factory: ClipFactory) -> None:
    clip = clip_factory(0.5)
    (outcome,) = migrate([clip], emu.base_url, emu.upload_url, emu.token, "no-such-parent", FAST)
    assert outcome.status == "failed" and outcome.posts == 1
    assert outcome.error.startswith("HTTP 4"), outcome.error
