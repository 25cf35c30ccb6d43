"""Recovery holes: shared titles, cut single uploads, changed sources, service errors, soft-deleted videos."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectors.client import VideoClient
from connectors.limiter import ApiRateLimiter
from connectors.models import Video
from connectors.titles import PLACEHOLDER_PREFIX
from connectors.tus import TusUpload
from core.item import Via
from emulator.control import EmulatorControl, Workspace
from flows.migrate.runner import run_migration
from state.ledger import Ledger
from state.machine import OpStatus
from state.models import Item
from tasks.exactly_once import OpJournal
from tasks.lookup import fits
from tasks.migrate.context import MigrateContext
from tasks.migrate.create import create_item, create_title
from tasks.migrate.reconcile import DELETE_KIND, delete_video, locate, sent_create
from tasks.migrate.transfer import transfer_item
from tests.fixtures.emulator import fast_polls
from tests.flows.helpers import options, settings_for, write_inventory
from tests.state.helpers import spec


@pytest.fixture()
def emu(emu_control: EmulatorControl) -> Workspace:
    """A fresh isolated workspace whose runs poll fast (tests/fixtures/emulator.fast_polls)."""
    return fast_polls(emu_control)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _clips(make: Any, n: int) -> list[Path]:
    """n real clips of n different sizes (the checks below tell videos apart by their bytes)."""
    clips = [make(0.5 + 0.25 * i, width=160 + 16 * (i % 3), name=f"c{i}.mp4") for i in range(n)]
    assert len({c.stat().st_size for c in clips}) == n
    return clips


def _videos_by_size(control: EmulatorControl, ws: Workspace) -> dict[int, dict[str, Any]]:
    videos = control.videos(ws)
    by_size = {v["file_size"]: v for v in videos}
    assert len(by_size) == len(videos), "two videos hold the same bytes: a duplicate"
    return by_size


def test_shared_titles_never_adopt_each_others_video(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    clips = _clips(clip_factory, 6)
    cards = [tmp_path / "card1", tmp_path / "card2"]
    rows = []
    for n, clip in enumerate(clips):
        if n < 2:  # camera files of two cards: the derived title is the same
            cards[n].mkdir()
            target = cards[n] / "GOPR0001.MP4"
            clip.rename(target)
            rows.append({"source": str(target), "title": ""})
        else:
            rows.append({"source": str(clip), "title": "Introduction" if n < 5 else "Summary"})
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    # Half the create answers are lost after the service committed them, and some answer 503 first.
    emu_control.set_faults(
        emu,
        [
            {"kind": "error", "status": 503, "method": "POST", "path": "^/v2/video$", "rate": 0.3},
            {"kind": "drop_after_commit", "method": "POST", "path": "^/v2/video$", "rate": 0.5},
        ],
        seed=7,
    )
    outcome = run_migration(options(inventory, emu, tmp_path, via="single", transfers=6), settings_for(emu))
    emu_control.clear_faults(emu)
    if outcome.exit_code != 0:  # a create that failed three times: the rerun finishes it
        outcome = run_migration(options(inventory, emu, tmp_path, via="single"), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    by_size = _videos_by_size(emu_control, emu)
    assert len(by_size) == len(rows)
    for row in rows:
        source = Path(row["source"])
        video = by_size[source.stat().st_size]
        assert video["title"] == (row["title"] or "GOPR0001")
        assert video["status"] == "done"


def test_create_titles_are_unique_per_parent(tmp_path: Path, emu: Workspace, clip_factory: Any) -> None:
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    clip = clip_factory(0.5)
    ledger.plan(
        [
            spec("a", 1, source=str(clip), title="Intro", parent_id=emu.project_id),
            spec("b", 2, source=str(clip), title="Intro", parent_id=emu.project_id),
            spec("c", 3, source=str(clip), title="Intro", parent_id=emu.folder_id),
            spec("d", 4, source=str(clip), title="Café", parent_id=emu.folder_id),
        ],
        run_id,
    )
    ctx = _ctx(emu, ledger, run_id)
    try:
        titles = {key: create_title(ctx, _item(ledger, key), Via.TUS) for key in "abcd"}
        assert titles["a"].startswith(PLACEHOLDER_PREFIX) and titles["b"].startswith(PLACEHOLDER_PREFIX)
        assert titles["a"] != titles["b"]
        # Unique in their parent, and JSON carries any title; headers carry ASCII only.
        assert titles["c"] == "Intro" and titles["d"] == "Café"
        assert create_title(ctx, _item(ledger, "d"), Via.SINGLE).startswith(PLACEHOLDER_PREFIX)
    finally:
        ctx.client.close()
        ledger.close()


def test_a_cut_single_upload_is_deleted_and_sent_again(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    clip = clip_factory(1.0)
    inventory = write_inventory(tmp_path / "inv.csv", [{"source": str(clip), "title": "cut once"}])
    emu_control.set_faults(
        emu, [{"kind": "truncate_body", "method": "POST", "path": "^/v2/video$", "fraction": 0.5, "times": 1}]
    )
    outcome = run_migration(options(inventory, emu, tmp_path, via="single"), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    videos = emu_control.videos(emu)
    assert [(v["status"], v["file_size"]) for v in videos] == [("done", clip.stat().st_size)]
    ledger = Ledger.open(tmp_path / "ledger.db", create=False)
    try:
        item = ledger.items()[0]
        journal = " | ".join(e.message or "" for e in ledger.events(item.key))
    finally:
        ledger.close()
    assert item.state == "finished"
    assert "deleted" in journal, journal  # the half-uploaded video was removed, not left beside the new one


def test_a_source_changed_before_a_resumed_upload_is_sent_whole_again(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    first, second = _clips(clip_factory, 2)
    source = tmp_path / "talk.mp4"
    source.write_bytes(first.read_bytes())
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    ledger.plan(
        [spec("talk", 1, source=str(source), title="talk", parent_id=emu.project_id)],
        run_id,
    )
    ctx = _ctx(emu, ledger, run_id)
    try:
        create_item(ctx, _item(ledger, "talk"))
        item = _item(ledger, "talk")
        assert item.state == "uploading" and item.upload_endpoint
        # A first run sent some bytes of the old version, then stopped.
        response = httpx.patch(
            item.upload_endpoint,
            content=first.read_bytes()[:4096],
            headers={
                "Tus-Resumable": "1.0.0",
                "Upload-Offset": "0",
                "Content-Type": "application/offset+octet-stream",
            },
        )
        assert response.status_code == 204
        ledger.record_offset("talk", 4096)
        # The file is replaced before the rerun (another size and mtime).
        source.write_bytes(second.read_bytes())
        os.utime(source, ns=(1, 2))
        assert transfer_item(ctx, "talk") == "uploaded"
    finally:
        ctx.client.close()
        ledger.close()
    videos = emu_control.videos(emu)
    assert len(videos) == 1
    assert videos[0]["file_size"] == second.stat().st_size
    if "md5" in videos[0]:
        assert videos[0]["md5"] == _md5(second)


def test_retry_errors_deletes_the_failed_video_and_uploads_again(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    clip = clip_factory(1.0)
    inventory = write_inventory(tmp_path / "inv.csv", [{"source": str(clip), "title": "fails once"}])
    emu_control.set_processing(emu, "manual")
    opts = options(inventory, emu, tmp_path, wait_timeout=3.0)
    run_migration(opts, settings_for(emu))
    (failed,) = emu_control.videos(emu)
    emu_control.set_video_status(emu, failed["id"], "error", "transcoder crashed")
    emu_control.set_processing(emu, "immediate")
    plain = run_migration(opts, settings_for(emu))
    assert plain.exit_code == 1  # a service-side error is not retried by default
    assert [v["id"] for v in emu_control.videos(emu)] == [failed["id"]]
    retried = run_migration(options(inventory, emu, tmp_path, retry_errors=True), settings_for(emu))
    assert retried.exit_code == 0, retried.reasons
    (video,) = emu_control.videos(emu)
    assert video["id"] != failed["id"] and video["status"] == "done"
    with Ledger.open(tmp_path / "ledger.db") as ledger:  # the delete went through its exactly-once step
        (deleted,) = ledger.ops(kind=DELETE_KIND)
    assert (deleted.op_key, deleted.status) == (f"delete:{deleted.owner_key}:{failed['id']}", OpStatus.DONE)


def test_a_delete_left_open_is_looked_up_not_sent_again(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    """A crash between a delete and its outcome: the next attempt settles the open intent by a GET (a 404 is
    gone: done) and sends no second DELETE; a video still there voids the intent and is deleted."""
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    ledger.plan([spec("k", 1, source="/x.mp4", title="T", parent_id=emu.project_id)], run_id)
    ctx = _ctx(emu, ledger, run_id)
    client = ctx.client
    try:
        gone = client.uploads.init(parent_id=emu.project_id, title="T", filesize=10).id
        there = client.uploads.init(parent_id=emu.project_id, title="U", filesize=10).id
        for video_id in (gone, there):  # the intents a crash left open
            OpJournal(ledger, run_id, f"delete:k:{video_id}", DELETE_KIND, {}, owner_key="k").write_intent()
        client.videos.delete(gone)  # the lost run's delete had gone through
        logged = len(emu_control.requests(emu.workspace_id))
        assert delete_video(ctx, _item(ledger, "k"), gone)
        assert delete_video(ctx, _item(ledger, "k"), there)
        sent = emu_control.requests(emu.workspace_id)[logged:]
        deletes = [r["path"] for r in sent if r["method"] in ("DELETE", "POST")]
        assert len(deletes) == 1 and deletes[0].endswith(there)  # only the video still there was deleted
        (settled,) = ledger.ops(op_key=f"delete:k:{gone}")
        assert (settled.status, settled.result) == (OpStatus.DONE, {"deleted": True, "found_gone": True})
        assert [op.status for op in ledger.ops(op_key=f"delete:k:{there}")] == [OpStatus.VOID, OpStatus.DONE]
        assert emu_control.videos(emu) == []
    finally:
        client.close()
        ledger.close()


def test_a_soft_deleted_video_is_never_adopted(tmp_path: Path, emu: Workspace) -> None:
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    row = spec("k", 1, source="/x.mp4", title="T", parent_id=emu.project_id)
    ledger.plan([row], run_id)
    ledger.begin_create("k", run_id, "T")
    ctx = _ctx(emu, ledger, run_id)
    client = ctx.client
    try:
        session = client.uploads.init(parent_id=emu.project_id, title="T", filesize=10)
        assert locate(ctx, _item(ledger, "k")) is not None
        listed = client.videos.get(session.id)
        gone = Video.model_validate({**listed.model_dump(), "deleted_at": datetime.now(UTC) + timedelta(1)})
        assert gone.deleted_at is not None
        sent = sent_create(_item(ledger, "k"))
        assert not fits(gone, sent, None)
        assert fits(listed, sent, None)
    finally:
        client.close()
        ledger.close()


def _ctx(emu: Workspace, ledger: Ledger, run_id: str) -> MigrateContext:
    limiter = ApiRateLimiter.memory(per_second=10, per_minute=300)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter)
    return MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id)


def _item(ledger: Ledger, key: str) -> Item:
    item = ledger.get(key)
    assert item is not None
    return item
