"""What a backup did not do, as its flow's outcome artifact shows it: one row per failed video (source, the
step that failed, the message), as archive's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.flows.backup_fixtures import backup, make_library
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.prefect_job import outcome_markdown


def test_the_outcome_names_each_failed_video_and_its_step(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=2)
    videos = sorted(v["id"] for v in emu_control.videos(emu))
    emu_control.set_faults(emu, [{"kind": "error", "status": 500, "path": "^/media/"}])  # no file downloads
    outcome = backup(emu, str(tmp_path / "dest"), tmp_path / "backup.db")
    assert outcome.exit_code == 1, outcome.reasons
    assert sorted(f["source"] for f in outcome.failed) == [f"video {v}" for v in videos]
    assert {f["code"] for f in outcome.failed} == {"copy"}, outcome.failed
    table = outcome_markdown(outcome)
    assert "2 not done:" in table and "| source | code | message |" in table, table
    for video in videos:
        assert f"| video {video} | copy |" in table, table
