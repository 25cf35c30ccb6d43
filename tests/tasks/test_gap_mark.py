"""The gap mark (tasks/gap_mark.py) against the emulator as a real server: a video that existed before a run
took its ledger is never taken for a look-alike the run made after it, whatever the service's clock and the
precision of its created_at; no mark known: nothing is taken; the mark survives the ledger to the microsecond.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger
from videoferry.tasks.gap import Gap
from videoferry.tasks.gap_mark import GapMark, keep_mark, precision_of, restored_mark, take_mark
from videoferry.tasks.lookup import SentCreate

TITLE = "Same title"


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory()) as made:
        yield made


def no_owner(ids: Any) -> dict[str, str]:
    return {}


@pytest.mark.parametrize(
    "variants",
    [[], ["whole-seconds"], ["whole-seconds", "clock-ahead"], ["clock-behind"]],
    ids=["plain", "whole-seconds", "whole-seconds-ahead", "behind"],
)
def test_a_video_made_before_the_mark_is_never_taken_for_its_look_alike_made_after(
    emu: Workspace, emu_control: EmulatorControl, client: VideoClient, clip_factory: Any, variants: list[str]
) -> None:
    emu_control.set_variants(emu, variants)
    clip: Path = clip_factory(1.0)
    original = client.uploads.single(
        parent_id=emu.project_id, title=TITLE, source=clip.read_bytes(), filename="a.mp4"
    )
    mark = take_mark(client)  # at once: the original is as close to the mark as a video can be
    assert mark.at is not None
    mark.hold()  # what a run's intent guard does before its first create
    copy = client.videos.copy(original.id, emu.project_id)

    gap = Gap("test", None, mark.at)
    sent = SentCreate(owner="unit:cp", title=TITLE, parent_id=emu.project_id, intent_at=None)
    assert [v.id for v in gap.listing(client)] == [copy.id]  # listed down to the mark: the original not
    found = gap.find(client, "cp", [sent], no_owner)
    assert found is not None and found.id == copy.id
    # the copy's own source is never its result, even when nothing bounds the listing by time
    assert Gap("test", None, None).find(client, "cp", [sent], no_owner, [original.id]) is None


def test_without_a_mark_nothing_is_taken(emu: Workspace, client: VideoClient, clip_factory: Any) -> None:
    made = client.uploads.single(
        parent_id=emu.project_id, title=TITLE, source=clip_factory(1.0).read_bytes(), filename="a.mp4"
    )
    gap = Gap("test", None, None)
    sent = SentCreate(owner="unit:cp", title=TITLE, parent_id=emu.project_id, intent_at=None)
    assert client.videos.get(made.id).title == TITLE
    assert gap.find(client, "cp", [sent], no_owner) is None  # cannot tell: the operation is done, not found
    assert not gap.pending("cp")


def test_the_mark_is_kept_in_the_ledger_to_the_microsecond(
    tmp_path: Path, emu: Workspace, client: VideoClient
) -> None:
    mark = take_mark(client)
    book = Ledger.open(tmp_path / "ledger.db")
    try:
        assert restored_mark(book) is None
        keep_mark(book, mark)
        assert restored_mark(book) == mark.at
        keep_mark(book, GapMark(None))
        assert restored_mark(book) is None
    finally:
        book.close()


@pytest.mark.parametrize(
    ("stamp", "step"),
    [
        ("2026-11-29T00:00:01Z", timedelta(seconds=1)),
        ("2026-11-29T00:00:01.250Z", timedelta(milliseconds=10)),
        ("2026-11-29T00:00:01.123Z", timedelta(milliseconds=1)),
        ("2026-11-29T00:00:01.123457Z", timedelta(microseconds=1)),
    ],
)
def test_the_precision_of_created_at_is_told_by_its_last_digit(stamp: str, step: timedelta) -> None:
    assert precision_of(datetime.fromisoformat(stamp)) == step
    assert precision_of(None) == timedelta(seconds=1)


def test_the_gap_listing_waits_until_a_lagging_list_shows_what_the_lost_run_made_last(
    emu: Workspace, emu_control: EmulatorControl, client: VideoClient, clip_factory: Any
) -> None:
    emu_control.set_variants(emu, ["list-lag"], list_lag_seconds=2.0)
    mark = take_mark(client)
    assert mark.at is not None
    mark.hold()
    # The lost run's last create, just before this run took the lock (its lease ended): not listed for 2 s.
    made = client.uploads.single(
        parent_id=emu.project_id, title=TITLE, source=clip_factory(1.0).read_bytes(), filename="a.mp4"
    )
    gap = Gap("test", None, mark.at, listable_at=time.monotonic() + 2.5)  # the settle time from the lock
    sent = SentCreate(owner="item:k", title=TITLE, parent_id=emu.project_id, intent_at=None)
    found = gap.find(client, "k", [sent], no_owner)  # listed at once, it would say "not there"
    assert found is not None and found.id == made.id
