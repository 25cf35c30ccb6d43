"""When status polls come: out of the way of pending creates, the last one after the youngest processing."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.state.helpers import spec
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.tus import TusUpload
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.readiness import Watcher
from videoferry.tasks.migrate.transfer import transfer_item


@pytest.fixture()
def ctx(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> Iterator[MigrateContext]:
    """A run with two uploaded clips whose videos wait for processing (manual), limits 10/s 30/min."""
    emu_control.set_limits(emu, rate_per_second=0, rate_per_minute=0)
    emu_control.set_processing(emu, "manual")
    limiter = ApiRateLimiter.memory(per_second=10, per_minute=30)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter)
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    clip = clip_factory(1.0)
    specs = [
        spec(k, n, source=str(clip), title=k, parent_id=emu.project_id, via="tus")
        for n, k in ((1, "a"), (2, "b"))
    ]
    ledger.plan(specs, run_id)
    context = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id, poll_interval=5.0)
    try:
        for key in ("a", "b"):
            assert transfer_item(context, key) == "uploaded"
        yield context
    finally:
        ledger.finish_run(run_id, "done")
        ledger.close()
        client.close()


def _video(ctx: MigrateContext, key: str) -> str:
    item = ctx.ledger.get(key)
    assert item is not None and item.video_id
    return item.video_id


def test_polls_wait_while_the_minute_budget_is_wanted_by_creates(ctx: MigrateContext) -> None:
    watcher = Watcher(ctx)
    watched = watcher.watched()
    limiter = ctx.client.transport.limiter
    used = limiter.per_minute - limiter.budget()  # the calls of the two uploads so far
    assert 0 < used < 10
    asked: list[int] = []

    def left(creates: int) -> Callable[[int], int]:
        """The creates left, counted as the ledger counts them: up to what the caller asks."""

        def count(at_most: int) -> int:
            asked.append(at_most)
            return min(creates, at_most)

        return count

    # Creates come slower than the budget lasts (few calls in the last minute): a poll takes nobody's slot.
    budget = limiter.budget()
    assert watcher.due(lambda: watched, creates_left=left(budget), uploading=True)
    while limiter.budget() > 7:
        limiter.acquire()
    # 23 calls in the last minute, 7 left: ten creates left would use them all.
    assert not watcher.due(lambda: watched, creates_left=left(10), uploading=True)
    assert not watcher.due(lambda: watched, creates_left=left(5000), uploading=True)
    # Five left: they all go now; the poll (nothing learned about processing yet) may come.
    assert watcher.due(lambda: watched, creates_left=left(5), uploading=True)
    # The count is asked whether any create is left, then no further than the budget it is compared with
    # (not a minute's limit of entries).
    assert asked == [1, budget, 1, 7, 1, 7, 1, 7], asked
    while limiter.budget() > 0:
        limiter.acquire()
    assert not watcher.due(lambda: watched, creates_left=left(1), uploading=True)
    assert asked[-2:] == [1, 1]  # an empty budget: nothing past whether a create is left
    # ... unless the run has gone without a poll for BUSY_POLL_SECONDS (no count past the first then).
    assert watcher.due(lambda: watched, creates_left=left(1), uploading=True, now=time.monotonic() + 301)
    assert asked[-3:] == [1, 1, 1]


def test_the_poll_after_the_last_upload_waits_for_the_shortest_processing_seen(
    ctx: MigrateContext, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    clip = clip_factory(1.0)
    watcher = Watcher(ctx)
    emu_control.set_video_status(emu, _video(ctx, "a"), "done")
    assert watcher.latency is None and watcher.due(watcher.watched, creates_left=lambda _: 0, uploading=False)
    assert sorted(watcher.poll_once()) == [("a", "uploaded", "done"), ("b", "uploaded", "processing")]
    assert watcher.latency is None  # one video ended: too few to tell
    watcher.latency = 1.0
    watcher.latency += 30.0  # as if processing took half a minute
    ctx.ledger.plan(
        [spec("c", 3, source=str(clip), title="c", parent_id=emu.project_id, via="tus")], ctx.run_id
    )
    assert transfer_item(ctx, "c") == "uploaded"  # c, uploaded just now, is not done for 30 s
    watched = watcher.watched()
    assert sorted(i.key for i in watched) == ["b", "c"]
    later = watcher.last_poll + 5.0
    # held back for b
    assert not watcher.due(lambda: watched, creates_left=lambda _: 0, uploading=False, now=later)
    assert not watcher.due(lambda: watched, creates_left=lambda _: 0, uploading=False, now=later + 4.9)
    assert watcher.due(
        lambda: watched, creates_left=lambda _: 0, uploading=False, now=later + 5.0
    )  # by one interval at most
    assert not watcher.due(
        lambda: watched, creates_left=lambda _: 0, uploading=False, now=watcher.last_poll + 4.9
    )  # 5 s rule


def test_processing_is_timed_to_the_listings_answer_not_to_a_wait_for_a_slot(
    ctx: MigrateContext, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    clip = clip_factory(1.0)
    ctx.ledger.plan(
        [spec("c", 3, source=str(clip), title="c", parent_id=emu.project_id, via="tus")], ctx.run_id
    )
    assert transfer_item(ctx, "c") == "uploaded"
    for key in ("a", "b", "c"):
        emu_control.set_video_status(emu, _video(ctx, key), "done")
    # The poll's client has a limiter of its own whose second is full of calls made after c ended (none
    # of them waited): the poll's list goes about a second later.
    limiter = ApiRateLimiter.memory(per_second=10, per_minute=300)
    while limiter.try_acquire():
        pass
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter) as client:
        watcher = Watcher(dataclasses.replace(ctx, client=client))
        assert sorted(watcher.poll_once()) == [(k, "uploaded", "done") for k in ("a", "b", "c")]
    # c was seen done only after that wait: as far as anyone can tell, processing took that long (timed
    # from the poll's start it would seem to have taken a few milliseconds, and the last poll of a run
    # would come before its last video is done).
    assert watcher.latency is not None and watcher.latency >= 0.9


def test_processing_is_the_least_upper_bound_a_poll_gave_raised_by_the_slowest_seen(
    ctx: MigrateContext, emu: Workspace, clip_factory
) -> None:
    """A poll that came late (held while creates were left, or retried through a 5xx burst) says only that
    processing took at most that long: a later, prompter poll's bound wins; a video seen still processing
    says it can take longer."""
    clip = clip_factory(1.0)
    ctx.ledger.plan(
        [spec("c", 3, source=str(clip), title="c", parent_id=emu.project_id, via="tus")], ctx.run_id
    )
    assert transfer_item(ctx, "c") == "uploaded"
    watcher = Watcher(ctx)
    items = watcher.watched()
    assert sorted(i.key for i in items) == ["a", "b", "c"]
    now = time.time()

    def poll(age: float, ended: list[str], shown: str = "abc", late: float = 0.0) -> float | None:
        """The estimate after a poll whose listing showed these videos `age` seconds after their uploads'
        end, those of `ended` terminal; a's end recorded `late` seconds after the others' (its last answer
        lost: the HEAD that learned it came that much later)."""
        watcher._seen_at = {i.video_id: now for i in items if i.video_id and i.key in shown}
        before = [
            dataclasses.replace(
                i, updated_at=datetime.fromtimestamp(now - age + (late if i.key == "a" else 0.0), UTC)
            )
            for i in items
        ]
        watcher._learn_latency(before, [(k, "uploaded", "done") for k in ended])
        return watcher.latency

    assert poll(30.0, ["a", "b"], shown="ab") is None  # two ended: too few to tell
    assert poll(30.0, ["a", "b", "c"]) == pytest.approx(30.0 * 1.25)  # a late poll: at most 30 s
    assert poll(2.0, ["a", "b", "c"]) == pytest.approx(2.0 * 1.25)  # a prompt one: at most 2 s
    assert poll(40.0, ["a", "b", "c"]) == pytest.approx(2.0 * 1.25)  # a later late one changes nothing
    # One video whose end was recorded late seems to process in 0.5 s: the poll's third time bounds it.
    assert poll(2.0, ["a", "b", "c"], late=1.5) == pytest.approx(2.0 * 1.25)
    assert poll(6.0, []) == pytest.approx(6.0 * 1.25)  # seen processing 6 s after their end: longer
