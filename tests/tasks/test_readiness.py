"""Readiness by listing: folders as parents, and a watched video behind a page of newer ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from connectors.client import VideoClient
from connectors.limiter import ApiRateLimiter
from connectors.tus import TusUpload
from emulator.control import EmulatorControl, Workspace
from flows.migrate.runner import run_migration
from state.ledger import Ledger
from tasks.migrate.context import MigrateContext
from tasks.migrate.readiness import Watcher
from tasks.migrate.transfer import transfer_item
from tests.fixtures.emulator import fast_polls
from tests.flows.helpers import api_calls, clip_rows, options, settings_for, write_inventory
from tests.state.helpers import spec


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
            client.uploads.init(parent_id=emu.project_id, title=f"other {n}", filesize=10)
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


def test_once_nothing_is_being_made_the_pages_of_a_listing_go_together_and_no_more_than_needed(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, monkeypatch
) -> None:
    """25 watched videos in pages of 10 (a service that caps pages): once nothing of ours is left to be
    made, the first page alone, then the two more the unseen videos fill, together, never a page past them;
    while an item is still to be created (new videos may come on top) the pages go one by one."""
    emu_control.set_limits(emu, rate_per_second=0, rate_per_minute=0)
    emu_control.set_processing(emu, "manual")
    emu_control.set_variants(emu, ["page-cap-10"])
    limiter = ApiRateLimiter.memory(per_second=1000, per_minute=100000)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter)
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    clip = clip_factory(0.5)
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id)
    asked: list[int] = []  # how many pages each ask of the listing held
    pages = Watcher._pages

    def counted(self: Watcher, filters: dict[str, str], numbers: range) -> list[Any]:
        asked.append(len(numbers))
        return pages(self, filters, numbers)

    monkeypatch.setattr(Watcher, "_pages", counted)

    def watched_batch(prefix: str, first: int) -> list[str]:
        keys = [f"{prefix}{n:02d}" for n in range(25)]
        made = [
            spec(k, first + n, source=str(clip), title=k, parent_id=emu.project_id, via="tus")
            for n, k in enumerate(keys)
        ]
        ledger.plan(made, run_id)
        assert [transfer_item(ctx, k) for k in keys] == ["uploaded"] * 25
        for key in keys:
            emu_control.set_video_status(emu, ledger.get(key).video_id or "", "done")  # type: ignore[union-attr]
        return keys

    try:
        watched_batch("a", 1)
        watcher = Watcher(ctx)
        before = len(api_calls(emu_control, emu))
        assert len(watcher.poll_once()) == 25
        assert asked == [1, 2] and watcher.list_calls == 3 and len(api_calls(emu_control, emu)) == before + 3
        watched_batch("b", 26)
        ledger.plan(
            [spec("later", 51, source=str(clip), title="later", parent_id=emu.project_id, via="tus")], run_id
        )
        asked.clear()
        assert len(watcher.poll_once()) == 25  # "later" is still to be created: one page at a time
        assert asked == [1, 1, 1] and watcher.list_calls == 6
    finally:
        ledger.close()
        client.close()


def test_a_held_poll_lists_the_pages_behind_the_first_early_and_each_page_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, monkeypatch
) -> None:
    """The poll that ends a run waits for the youngest videos' processing; once nothing of ours can be made,
    the pages behind the first (videos done long ago) are listed during that wait, the first page when the
    poll comes: the same three pages one listing asks, and the older items move on before the wait ends."""
    emu_control.set_limits(emu, rate_per_second=0, rate_per_minute=0)
    emu_control.set_processing(emu, "manual")
    emu_control.set_variants(emu, ["page-cap-10"])
    limiter = ApiRateLimiter.memory(per_second=1000, per_minute=100000)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter)
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    clip = clip_factory(0.5)
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id)
    asked: list[list[int]] = []  # the page numbers of each ask
    pages = Watcher._pages

    def counted(self: Watcher, filters: dict[str, str], numbers: range) -> list[Any]:
        asked.append(list(numbers))
        return pages(self, filters, numbers)

    monkeypatch.setattr(Watcher, "_pages", counted)

    def uploaded(prefix: str, first: int) -> list[str]:
        keys = [f"{prefix}{n:02d}" for n in range(25)]
        made = [
            spec(k, first + n, source=str(clip), title=k, parent_id=emu.project_id, via="tus")
            for n, k in enumerate(keys)
        ]
        ledger.plan(made, run_id)
        assert [transfer_item(ctx, k) for k in keys] == ["uploaded"] * 25
        return keys

    def finish(keys: list[str]) -> None:
        for key in keys:
            emu_control.set_video_status(emu, ledger.get(key).video_id or "", "done")  # type: ignore[union-attr]

    try:
        watcher = Watcher(ctx)
        finish(uploaded("a", 1))
        assert len(watcher.poll_once()) == 25  # the pages are 10 long (learned)
        keys = uploaded("b", 26)
        finish(keys[:20])  # the 5 youngest still process
        watcher.latency = 3600.0  # processing seems long: the poll is held for the youngest upload
        assert not watcher.may_list_early()  # no poll held yet
        assert not watcher.due(watcher.watched, creates_left=lambda: 0, uploading=False)
        assert watcher.may_list_early()
        asked.clear()
        before = len(api_calls(emu_control, emu))
        changed = watcher.list_early()
        assert asked == [[2], [3]]  # the pages behind the first, up to where 15 of the 25 can be
        assert sorted(key for key, _, _ in changed) == keys[:15]
        assert not watcher.may_list_early()  # once per held poll
        finish(keys[20:])
        changed = watcher.poll_once()
        assert asked == [[2], [3], [1]]  # the first page, and no page twice
        assert sorted(key for key, _, _ in changed) == keys[15:]
        assert len(api_calls(emu_control, emu)) == before + 3  # what one listing of 25 asks: no GET
        assert ledger.count(["uploaded", "processing"]) == 0
    finally:
        ledger.close()
        client.close()
