"""Init answers that name an upload session (variant init-session-id): the item's video id is unknown until a
listing shows it, and no failure on the way may let the item be created a second time beside its first video.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.emulator import fast_polls
from tests.state.helpers import spec
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.tus import TusUpload
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger
from videoferry.state.models import Item
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.create import create_item
from videoferry.tasks.migrate.transfer import transfer_batch, transfer_item

#: Every request to an upload address (HEAD and PATCH) fails.
UPLOADS_FAIL = [{"kind": "error", "status": 503, "path": "^/upload/"}]
#: Every list call fails (GET /v1/videos, not a single video's GET).
LISTS_FAIL = [{"kind": "error", "status": 503, "method": "GET", "path": "^/v1/videos$"}]
#: Every delete of a video is refused.
DELETES_REFUSED = [{"kind": "error", "status": 403, "method": "DELETE", "path": "^/v1/videos/"}]


@pytest.fixture()
def emu(emu_control: EmulatorControl) -> Workspace:
    """A fresh isolated workspace whose runs poll fast (tests/fixtures/emulator.fast_polls)."""
    return fast_polls(emu_control)


def _ctx(emu: Workspace, ledger: Ledger, run_id: str) -> MigrateContext:
    limiter = ApiRateLimiter.memory(per_second=10, per_minute=300)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter)
    tus = TusUpload(max_attempts=2, initial_wait=0.01, max_wait=0.02)
    return MigrateContext(client=client, tus=tus, ledger=ledger, run_id=run_id)


def _item(ledger: Ledger, key: str) -> Item:
    item = ledger.get(key)
    assert item is not None
    return item


def _one_video_of(control: EmulatorControl, ws: Workspace, source: Path) -> dict[str, Any]:
    videos = control.videos(ws)
    shown = [(v["title"], v["status"], v["file_size"]) for v in videos]
    assert len(videos) == 1, f"the item has {len(videos)} videos: {shown}"
    assert videos[0]["file_size"] == source.stat().st_size
    return videos[0]


def _session_run(
    tmp_path: Path, emu: Workspace, control: EmulatorControl, source: Path
) -> tuple[Ledger, str]:
    control.set_variants(emu, ["init-session-id"])
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    ledger.plan([spec("k", 1, source=str(source), title="混沌 1-34", parent_id=emu.project_id)], run_id)
    return ledger, run_id


def test_a_failed_upload_keeps_the_video_its_session_init_made(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """tus gives up on a session init's upload: the item fails, the next run requeues it; one video."""
    clip = clip_factory(1.0)
    ledger, run_id = _session_run(tmp_path, emu, emu_control, clip)
    ctx = _ctx(emu, ledger, run_id)
    try:
        emu_control.set_faults(emu, UPLOADS_FAIL)
        assert transfer_item(ctx, "k") == "failed"
        emu_control.clear_faults(emu)
        (first,) = emu_control.videos(emu)
        assert first["file_size"] == 0
        # The failed item knows its video (found by listing), so the requeue resumes its upload.
        assert _item(ledger, "k").video_id is not None
        ledger.requeue_failed(run_id)  # what the next run does first
        assert transfer_item(ctx, "k") == "uploaded"
    finally:
        ctx.client.close()
        ledger.close()
    video = _one_video_of(emu_control, emu, clip)
    assert video["id"] == first["id"]


def test_a_failed_lookup_while_replacing_a_session_video_creates_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """The source changed after a session init; the lookup of the video to delete fails: postponed."""
    first, second = (clip_factory(0.5 + 0.5 * i, name=f"c{i}.mp4") for i in range(2))
    source = tmp_path / "talk.mp4"
    source.write_bytes(first.read_bytes())
    ledger, run_id = _session_run(tmp_path, emu, emu_control, source)
    ctx = _ctx(emu, ledger, run_id)
    try:
        create_item(ctx, _item(ledger, "k"))  # a run stopped right after its init: uploading, no video id
        item = _item(ledger, "k")
        assert item.state == "uploading" and item.video_id is None and item.upload_endpoint
        source.write_bytes(second.read_bytes())  # another version before the rerun
        os.utime(source, ns=(1, 2))
        emu_control.set_faults(emu, LISTS_FAIL)
        transfer_batch(ctx, ["k"])
        # The video to delete could not be looked up: the item stays where it was, not free to create again.
        item = _item(ledger, "k")
        assert (item.state, item.video_id) == ("uploading", None), (item.state, item.error_message)
        assert len(emu_control.videos(emu)) == 1
        emu_control.clear_faults(emu)
        ledger.requeue_failed(run_id)  # the next run
        assert transfer_item(ctx, "k") == "uploaded"
    finally:
        ctx.client.close()
        ledger.close()
    _one_video_of(emu_control, emu, source)


def test_a_refused_delete_of_a_session_video_keeps_its_id(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """The source changed after a session init and the delete of the unfinished video is refused: the
    failed item holds that video's id, so the next run deletes it before creating again."""
    first, second = (clip_factory(0.5 + 0.5 * i, name=f"d{i}.mp4") for i in range(2))
    source = tmp_path / "talk.mp4"
    source.write_bytes(first.read_bytes())
    ledger, run_id = _session_run(tmp_path, emu, emu_control, source)
    ctx = _ctx(emu, ledger, run_id)
    try:
        create_item(ctx, _item(ledger, "k"))
        source.write_bytes(second.read_bytes())
        os.utime(source, ns=(1, 2))
        emu_control.set_faults(emu, DELETES_REFUSED)
        assert transfer_item(ctx, "k") == "failed"
        (kept,) = emu_control.videos(emu)
        assert _item(ledger, "k").video_id is not None
        emu_control.clear_faults(emu)
        ledger.requeue_failed(run_id)
        assert transfer_item(ctx, "k") == "uploaded"
    finally:
        ctx.client.close()
        ledger.close()
    assert _one_video_of(emu_control, emu, source)["id"] != kept["id"]
