"""Faults of a platform source in `videoferry migrate` (real stand-ins, the real emulator, the CLI): a
video deleted before its create or without a download link fails with the reason while the others go on;
a 5xx burst is retried; a source that stops answering stops the run, resumable; a malformed listing names
the page and field."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.fixtures.platforms import platform_env
from tests.flows.helpers import write_inventory
from tests.flows.test_migrate_platforms import _migrate, _vimeo_video
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.emulator.platforms.server import Standin, StandinControl, start_standin

Fixture = tuple[Standin, StandinControl]


def _states(tmp: Path) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(tmp / "ledger.db") as db:
        return {k: (s, m) for k, s, m in db.execute("select key, state, error_message from items")}


def test_deleted_and_undownloadable_videos_fail_with_the_reason_the_others_finish(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            _vimeo_video(clip_factory, "31", "Kept"),
            _vimeo_video(clip_factory, "32", "Deleted"),
            _vimeo_video(clip_factory, "33", "No download", broken={"download": []}),
            _vimeo_video(clip_factory, "34", "Busy", broken={"status": "transcoding"}),
        ]
    )
    inventory = write_inventory(
        tmp_path / "inv.csv",
        [
            {"source": f"vimeo:{i}", "title": t}
            for i, t in (("31", "Kept"), ("32", "Deleted"), ("33", "No"), ("34", "Busy"))
        ],
    )
    control.delete("32")  # deleted at the source after the inventory was written, before its create
    run = _migrate(emu, platform_env(standin), str(inventory), tmp_path)
    assert run.returncode == 1, run.stderr + run.stdout
    states = _states(tmp_path)
    assert states["vimeo:31"][0] == "finished"
    assert states["vimeo:32"] == ("failed", "vimeo video 32 was deleted at the source")
    assert states["vimeo:33"][0] == "failed" and "offers no downloadable file" in (
        states["vimeo:33"][1] or ""
    )
    assert states["vimeo:34"] == (
        "failed",
        "vimeo video 34 is not available yet (status transcoding): a later run takes it",
    )
    assert [v["title"] for v in emu_control.videos(emu)] == ["Kept"]
    # Transcoded since: the next run takes it (and tries the others again, failing them the same way).
    control.seed(videos=[_vimeo_video(clip_factory, "34", "Busy")])
    again = _migrate(emu, platform_env(standin), str(inventory), tmp_path)
    assert again.returncode == 1, again.stderr + again.stdout
    assert _states(tmp_path)["vimeo:34"][0] == "finished"
    assert sorted(v["title"] for v in emu_control.videos(emu)) == ["Busy", "Kept"]


def test_a_5xx_burst_is_retried(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[_vimeo_video(clip_factory, "41", "One"), _vimeo_video(clip_factory, "42", "Two")])
    control.configure(fault_count=3, fault_status=503)
    run = _migrate(emu, platform_env(standin), "vimeo:", tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    assert sorted(v["title"] for v in emu_control.videos(emu)) == ["One", "Two"]
    assert sum(1 for r in control.log() if r["status"] == 503) == 3


def test_a_source_gone_mid_run_stops_it_and_a_rerun_resumes(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    standin = start_standin("vimeo")
    control = StandinControl(standin.base_url)
    env = platform_env(standin)
    try:
        control.seed(
            videos=[_vimeo_video(clip_factory, "51", "One"), _vimeo_video(clip_factory, "52", "Two")]
        )
        inventory = write_inventory(
            tmp_path / "inv.csv",
            [{"source": "vimeo:51", "title": "One"}, {"source": "vimeo:52", "title": "Two"}],
        )
        control.configure(fault_count=1000, fault_status=503)  # the source answers nothing but 503 now
        stopped = _migrate(emu, env, str(inventory), tmp_path)
        assert stopped.returncode == 1, stopped.stderr + stopped.stdout
        assert "vimeo answered 503" in stopped.stdout + stopped.stderr
        assert {s for s, _ in _states(tmp_path).values()} == {"planned"}
        assert emu_control.videos(emu) == []
        control.configure(fault_count=0)
        again = _migrate(emu, env, str(inventory), tmp_path)
        assert again.returncode == 0, again.stderr + again.stdout
        assert sorted(v["title"] for v in emu_control.videos(emu)) == ["One", "Two"]
    finally:
        control.close()
        standin.stop()


def test_a_malformed_listing_names_the_page_and_field(
    tmp_path: Path, emu: Workspace, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[_vimeo_video(clip_factory, "61", "Bad", broken={"uri": None})])
    run = _migrate(emu, platform_env(standin), "vimeo:", tmp_path)
    assert run.returncode == 1, run.stderr + run.stdout
    assert "vimeo page 1 of the account's videos, field data[0].uri" in run.stderr + run.stdout
    assert "nothing was sent" in run.stderr + run.stdout
