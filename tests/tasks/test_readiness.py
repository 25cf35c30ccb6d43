"""Readiness by listing: folders as parents, and a watched video behind a page of newer ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.emulator import fast_polls
from tests.flows.helpers import api_calls, clip_rows, options, settings_for, write_inventory
from tests.state.helpers import spec
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.tus import TusUpload
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.readiness import Watcher
from videoferry.tasks.migrate.schedule import ItemSchedule
from videoferry.tasks.migrate.transfer import transfer_item
from videoferry.tasks.scheduling import Handle


@pytest.fixture()
def emu(emu_control: EmulatorControl) -> Workspace:
    """A fresh isolated workspace whose runs poll fast (tests/fixtures/emulator.fast_polls)."""
    return fast_polls(emu_control)


def test_a_folder_as_parent(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3, metadata=False))
    outcome = run_migration(options(inventory, emu, tmp_path, parent_id=emu.folder_id), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    assert {v["folder_id"] for v in emu_control.videos(emu)} == {emu.folder_id}
    # The one GET that learned what init ids name told that the parent is a folder: no GET more for that
    gets = [e for e in api_calls(emu_control, emu) if e["method"] == "GET" and e["path"].count("/") == 3]
    assert len(gets) == 1


def test_watched_video_behind_a_full_page_of_newer_ones(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    emu_control.set_limits(emu, rate_per_second=0, rate_per_minute=0)
    emu_control.set_processing(emu, "manual")
    limiter = ApiRateLimiter.memory(per_second=1000, per_minute=100000)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter)
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    clip = clip_factory(1.0)
    ledger.plan(
        [spec("ours", 1, source=str(clip), title="ours", parent_id=emu.project_id, via="tus")],
        run_id,
    )
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id)
    try:
        assert transfer_item(ctx, "ours") == "uploaded"
        ours = ledger.get("ours")
        assert ours is not None and ours.video_id
        for n in range(120):  # newer videos of someone else in the same project
            client.uploads.create_video(parent_id=emu.project_id, title=f"other {n}", filesize=10)
        emu_control.set_video_status(emu, ours.video_id, "done")
        watcher = Watcher(ctx)
        changed = watcher.poll_once()
        assert changed == [("ours", "uploaded", "done")]
        assert watcher.list_calls == 2  # the newest page, then the one holding ours
        assert ctx.scopes == {emu.project_id: "project_id"}  # learned by the GET that learned init ids
    finally:
        ledger.finish_run(run_id, "done")
        ledger.close()
        client.close()


class CappedPages:
    """25-item batches uploaded by tus into a workspace whose list pages hold 10 (page-cap-10), processing by
    hand, no rate limit; `asked` holds the page numbers of each ask of the listing (Watcher._pages)."""

    def __init__(
        self, tmp_path: Path, emu: Workspace, control: EmulatorControl, clip_factory: Any, monkeypatch: Any
    ) -> None:
        control.set_limits(emu, rate_per_second=0, rate_per_minute=0)
        control.set_processing(emu, "manual")
        control.set_variants(emu, ["page-cap-10"])
        self.emu, self.control = emu, control
        limiter = ApiRateLimiter.memory(per_second=1000, per_minute=100000)
        self.client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter)
        self.ledger = Ledger.open(tmp_path / "l.db")
        self.run_id = self.ledger.start_run("test", {})
        self.clip = clip_factory(0.5)
        self.ctx = MigrateContext(client=self.client, tus=TusUpload(), ledger=self.ledger, run_id=self.run_id)
        self.asked: list[list[int]] = []
        pages = Watcher._pages

        def counted(watcher: Watcher, filters: dict[str, str], numbers: range) -> list[Any]:
            self.asked.append(list(numbers))
            return pages(watcher, filters, numbers)

        monkeypatch.setattr(Watcher, "_pages", counted)

    def item(self, key: str, row: int) -> Any:
        return spec(key, row, source=str(self.clip), title=key, parent_id=self.emu.project_id, via="tus")

    def uploaded(self, prefix: str, first: int) -> list[str]:
        keys = [f"{prefix}{n:02d}" for n in range(25)]
        self.ledger.plan([self.item(k, first + n) for n, k in enumerate(keys)], self.run_id)
        assert [transfer_item(self.ctx, k) for k in keys] == ["uploaded"] * 25
        return keys

    def finish(self, keys: list[str]) -> None:
        for key in keys:
            item = self.ledger.get(key)
            assert item is not None and item.video_id
            self.control.set_video_status(self.emu, item.video_id, "done")

    def calls(self) -> int:
        return len(api_calls(self.control, self.emu))

    def close(self) -> None:
        self.ledger.close()
        self.client.close()


def _no_transfer(keys: list[str]) -> Handle:
    raise AssertionError(f"nothing is left to transfer, yet {keys} were submitted")


def _interval_passed(watcher: Watcher) -> None:
    """Move the watcher's last poll and listing one poll interval back: the uploads since the last poll took
    that long on a slow machine and far less on a fast one, and a poll within the interval is never due."""
    interval = max(watcher.ctx.poll_seconds(), watcher.ctx.poll_every())
    watcher.last_poll -= interval
    watcher.last_listing -= interval


def test_a_poll_whose_hold_ended_while_the_pages_behind_it_were_listed_goes_in_the_same_round(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, monkeypatch
) -> None:
    """The round that lists the pages behind a held poll's first asks again whether the poll is due: when
    the youngest videos' processing ended meanwhile, the first page is listed then, not a round (a tick of
    sleep and a round's ledger reads) later."""
    run = CappedPages(tmp_path, emu, emu_control, clip_factory, monkeypatch)
    try:
        schedule = ItemSchedule(run.ctx, _no_transfer, transfers=1, wait_timeout=None, tick=0.1, on_tick=None)
        watcher = schedule.watcher
        run.finish(run.uploaded("a", 1))
        assert len(watcher.poll_once()) == 25
        keys = run.uploaded("b", 26)
        run.finish(keys[:20])
        _interval_passed(watcher)
        watcher.latency = 3600.0  # the youngest seem to process for long: the poll is held
        early = watcher.list_early

        def listed_while_the_youngest_ended() -> list[tuple[str, str, str]]:
            changed = early()
            run.finish(keys[20:])
            watcher.latency = 0.0  # their processing is over: the hold has ended
            return changed

        monkeypatch.setattr(watcher, "list_early", listed_while_the_youngest_ended)
        run.asked.clear()
        schedule.poll_what_waits()  # one round: the poll held, the pages behind its first, then the first
        assert run.asked == [[2, 3], [1]]
        assert run.ledger.count(["uploaded", "processing"]) == 0
    finally:
        run.close()


def test_once_nothing_is_being_made_the_pages_of_a_listing_go_together_and_no_more_than_needed(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, monkeypatch
) -> None:
    """25 watched videos in pages of 10 (a service that caps pages): once nothing of ours is left to be
    made, the first page alone, then the two more the unseen videos fill, together, never a page past them;
    while an item is still to be created (new videos may come on top) the pages go one by one."""
    run = CappedPages(tmp_path, emu, emu_control, clip_factory, monkeypatch)
    try:
        run.finish(run.uploaded("a", 1))
        watcher = Watcher(run.ctx)
        before = run.calls()
        assert len(watcher.poll_once()) == 25
        assert run.asked == [[1], [2, 3]] and watcher.list_calls == 3 and run.calls() == before + 3
        run.finish(run.uploaded("b", 26))
        run.ledger.plan([run.item("later", 51)], run.run_id)
        run.asked.clear()
        assert len(watcher.poll_once()) == 25  # "later" is still to be created: one page at a time
        assert run.asked == [[1], [2], [3]] and watcher.list_calls == 6
    finally:
        run.close()


def test_a_held_poll_lists_the_pages_behind_the_first_early_and_each_page_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, monkeypatch
) -> None:
    """The poll that ends a run waits for the youngest videos' processing; once nothing of ours can be made,
    the pages behind the first (videos done long ago) are listed during that wait, the first page when the
    poll comes: the same three pages one listing asks, and the older items move on before the wait ends."""
    run = CappedPages(tmp_path, emu, emu_control, clip_factory, monkeypatch)
    try:
        watcher = Watcher(run.ctx)
        run.finish(run.uploaded("a", 1))
        assert len(watcher.poll_once()) == 25  # the pages are 10 long (learned)
        keys = run.uploaded("b", 26)
        run.finish(keys[:20])  # the 5 youngest still process
        _interval_passed(watcher)
        watcher.latency = 3600.0  # processing seems long: the poll is held for the youngest upload
        assert not watcher.may_list_early(watcher.watching())  # no poll held yet
        assert not watcher.due(watcher.watched, creates_left=lambda _: 0, uploading=False)
        assert watcher.may_list_early(watcher.watching())
        run.asked.clear()
        before = run.calls()
        changed = watcher.list_early()
        # the pages behind the first, up to where 15 of the 25 can be, at once (their size is known)
        assert run.asked == [[2, 3]]
        assert sorted(key for key, _, _ in changed) == keys[:15]
        assert not watcher.may_list_early(watcher.watching())  # once per held poll
        run.finish(keys[20:])
        changed = watcher.poll_once()
        assert run.asked == [[2, 3], [1]]  # the first page, and no page twice
        assert sorted(key for key, _, _ in changed) == keys[15:]
        assert run.calls() == before + 3  # what one listing of 25 asks: no GET
        assert run.ledger.count(["uploaded", "processing"]) == 0
    finally:
        run.close()
