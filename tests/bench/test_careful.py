"""The careful baseline script's rules on the emulator: 429 waits, 5xx retried 5 times, lost answers dupe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.careful import Outcome, Timing, migrate
from emulator.control import EmulatorControl, Workspace
from tests.fixtures.media import ClipFactory

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


def test_a_lost_upload_answer_is_sent_again_and_makes_a_duplicate(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: ClipFactory
) -> None:
    _fault(emu_control, emu, kind="drop_after_commit", path="^/v2/video$", times=1)
    clip = clip_factory(0.5)
    (outcome,) = _run(emu, [clip])
    assert outcome.status == "done" and outcome.posts == 2
    videos = emu_control.videos(emu)
    assert [v["title"] for v in videos] == [clip.stem, clip.stem]  # what such a script leaves behind


def test_a_4xx_is_not_retried(emu: Workspace, clip_factory: ClipFactory) -> None:
    clip = clip_factory(0.5)
    (outcome,) = migrate([clip], emu.base_url, emu.upload_url, emu.token, "no-such-parent", FAST)
    assert outcome.status == "failed" and outcome.posts == 1
    assert outcome.error.startswith("HTTP 4"), outcome.error
