"""A broken single upload whose video could not be deleted: a plain rerun deletes it and migrates the row."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.flows.helpers import clip_rows, options, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger
from videoferry.tasks import lookup, shared_listing


def test_a_rerun_deletes_the_broken_video_a_failed_run_could_not(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The body is cut (the video left in error), the lookup finds that video and its delete is refused five
    times: the item fails, keeping the video's id. The plain rerun (no --retry-errors) sends the delete again
    and migrates the row anew: one done video, the broken one gone (chaos seed 3 of migrate had the rerun
    watch the broken video as processing and end in error)."""
    for module in (lookup, shared_listing):
        monkeypatch.setattr(module, "SETTLE_SECONDS", 1.0)  # the settle wait is not what is tested here
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    emu_control.set_faults(
        emu,
        [
            {"kind": "truncate_body", "path": "^/v2/video$", "fraction": 0.3, "times": 1},
            {"kind": "error", "status": 503, "method": "DELETE", "path": "^/v1/videos/", "times": 5},
        ],
    )
    opts = options(inventory, emu, tmp_path, via="single")
    first = run_migration(opts, settings_for(emu))
    (broken,) = emu_control.videos(emu)
    assert broken["status"] == "error"  # the premise: the cut left it in error, and it could not be deleted
    assert first.exit_code == 1 and "could not delete video" in " ".join(first.reasons), first.reasons
    since = time.time()
    again = run_migration(opts, settings_for(emu))
    assert again.exit_code == 0, again.reasons
    (video,) = emu_control.videos(emu)  # the broken one deleted, one new
    assert video["id"] != broken["id"] and video["status"] == "done"
    deletes = [r for r in emu_control.requests(emu.workspace_id, since=since) if r["method"] == "DELETE"]
    assert [r["status"] for r in deletes] == [200]  # one delete, of the broken video
    with Ledger.open(tmp_path / "ledger.db", create=False) as book:
        (item,) = book.items()
    assert item.video_id == video["id"]
