"""Full migrations against the emulator with the plain (Prefect-free) runner."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.flows.helpers import clip_rows, creates, options, settings_for, write_inventory
from videoferry.connectors.errors import AuthError
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.job import Exit, exit_for
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger


def test_full_migration_lands_every_item_exactly(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 6)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    assert outcome.summary["counts"]["finished"] == 6
    videos = emu_control.videos(emu)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)
    by_title = {v["title"]: v for v in videos}
    for row in rows:
        video = by_title[row["title"]]
        assert video["status"] == "done"
        if "chapters" in row:
            assert [c["time"] for c in video["chapters"]["items"]] == [0, 500]
            assert video["chapters"]["items"][1]["title"] == "Глава"
        if "tags" in row:
            assert video["tags"] == ["a", "b"]


def test_rerun_of_a_finished_ledger_makes_no_create_call(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 4, metadata=False))
    opts = options(inventory, emu, tmp_path)
    assert run_migration(opts, settings_for(emu)).exit_code == 0
    mark = time.time()
    again = run_migration(opts, settings_for(emu))
    assert again.exit_code == 0
    assert creates(emu_control, emu, since=mark) == []
    assert len(emu_control.videos(emu)) == 4


def test_url_and_single_modes(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    clip = clip_factory(1.0, name="single.mp4")
    inventory = write_inventory(tmp_path / "inv.csv", [{"source": str(clip), "title": "Ünïcode Ω single"}])
    outcome = run_migration(options(inventory, emu, tmp_path, via="single"), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    (video,) = emu_control.videos(emu)
    assert video["title"] == "Ünïcode Ω single"  # travelled as a placeholder header, then set by update


def test_bad_rows_are_reported_and_the_rest_finish(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    good = clip_rows(clip_factory, 2, metadata=False)
    rows = [
        *good,
        {"source": str(tmp_path / "missing.mp4"), "title": "missing file"},
        {"source": "", "title": "no source"},
        {"source": str(clip_factory(1.0, name="x.mp4")), "title": "bad chapters", "chapters": "[{oops"},
    ]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 1
    text = "\n".join(outcome.reasons)
    assert "row 4" in text and "row 5" in text  # rejected rows named by number
    assert "source" in text
    ledger = Ledger.open(tmp_path / "ledger.db", create=False)
    try:
        counts = ledger.counts()
        (missing,) = ledger.items(["failed"])
    finally:
        ledger.close()
    assert counts["finished"] == 2
    assert missing.spec.row == 3 and missing.error_code == "source"
    assert len(emu_control.videos(emu)) == 2


def test_dry_run_makes_no_api_call(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3, metadata=False))
    mark = time.time()
    outcome = run_migration(options(inventory, emu, tmp_path, dry_run=True), settings_for(emu))
    # the per-item plan's counts (migrate --dry-run prints one line per item): 3 to create, nothing else
    assert outcome.preview is not None
    assert outcome.preview["create"] == 3
    assert sum(outcome.preview.values()) == 3, outcome.preview
    assert emu_control.requests(emu.workspace_id, since=mark) == []
    assert not (tmp_path / "ledger.db").exists()


def test_a_rejected_token_stops_the_run_before_any_item(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2, metadata=False))
    bad = settings_for(emu).with_overrides(token="not-a-token")
    mark = time.time()
    with pytest.raises(AuthError) as refused:  # the command line's exit status 2 (flows/job.exit_for)
        run_migration(options(inventory, emu, tmp_path), bad)
    assert (exit_for(refused.value) or (None,))[0] == Exit.CONFIG
    assert not (tmp_path / "ledger.db").exists()  # refused before the ledger is touched
    assert emu_control.videos(emu) == []
    log = emu_control.requests(since=mark)
    # the address probe's GET without a token aside (400; none when this process passed it a moment ago),
    # one list with the token: refused, not retried
    statuses = [r["status"] for r in log if r["path"].startswith("/v1/videos")]
    assert [s for s in statuses if s != 400] == [401], statuses


@pytest.mark.parametrize("via", ["tus", "url"])
def test_s3_sources(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, s3_bucket: str, via: str
) -> None:
    from videoferry.connectors.s3 import shared_s3_client

    client = shared_s3_client()
    for i in range(2):
        client.upload_file(str(clip_factory(1.0, name=f"s3-{i}.mp4")), s3_bucket, f"videos/clip-{i}.mp4")
    outcome = run_migration(
        options(f"s3://{s3_bucket}/videos/", emu, tmp_path, via=via),
        settings_for(emu),
    )
    assert outcome.exit_code == 0, outcome.reasons
    assert sorted(v["title"] for v in emu_control.videos(emu)) == ["clip-0", "clip-1"]
