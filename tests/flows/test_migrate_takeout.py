"""`videoferry migrate youtube-takeout:PATH` through the CLI into the emulator: a Takeout built from real
clips, files matched to videos.csv by the normalised title, every unmatched file and row listed, each item
keyed `youtube:<id>`; the .zip form; a rerun makes no second video."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from emulator.control import EmulatorControl, Workspace
from tests.fixtures.kill_rerun import kill_then_rerun, ledger_count
from tests.fixtures.takeout import make_takeout, zip_takeout
from tests.flows.helpers import cli_env, creates, run_cli


def _migrate(ws: Workspace, source: str, tmp: Path, *extra: str) -> tuple[int, str]:
    args = [
        "migrate",
        source,
        "--parent-id",
        ws.project_id,
        "--ledger",
        str(tmp / "ledger.db"),
        "--wait-timeout",
        "60",
        "--transfers",
        "2",
        "--chunk-mib",
        "1",
        *extra,
    ]
    done = run_cli(args, cli_env(ws), cwd=tmp)
    return done.returncode, done.stdout + done.stderr


def test_takeout_folder_migrates_matched_by_title_and_lists_the_unmatched(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    folder = make_takeout(
        tmp_path / "export",
        clip_factory,
        [
            ("vidA1234567", "Intro: what/why?", "Public"),
            ("vidB1234567", "Same title", "Private"),
            ("vidC1234567", "Same title", "Unlisted"),
            ("vidD1234567", "No file here", "Public"),
        ],
        file_names={"vidD1234567": "renamed by hand.mp4"},
        extra_files=["stray.mp4"],
    )
    code, output = _migrate(emu, f"youtube-takeout:{folder}", tmp_path, "--report", str(tmp_path / "rep"))
    assert code == 0, output
    report = (tmp_path / "rep" / "items.csv").read_text()
    assert "bytes from youtube: the file Intro_ what_why_.mp4; source page" in report
    assert "https://www.youtube.com/watch?v=vidA1234567, created 2024-03-01T10:00:00+00:00" in report
    videos = emu_control.videos(emu)
    assert sorted(v["title"] for v in videos) == ["Intro: what/why?", "Same title", "Same title"]
    assert "1 rows of videos.csv have no file: row 5 (vidD1234567, 'No file here')" in output
    assert "2 files of videos/ match no row of videos.csv: renamed by hand.mp4, stray.mp4" in output
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        keys = {k for (k,) in db.execute("select key from items")}
    assert keys == {"youtube:vidA1234567", "youtube:vidB1234567", "youtube:vidC1234567"}
    privacy = {v["title"]: v["privacy_type"] for v in videos if v["title"] != "Same title"}
    assert privacy == {"Intro: what/why?": "anywhere"}
    assert "nowhere" in [v["privacy_type"] for v in videos if v["title"] == "Same title"]  # the Private one
    assert "1 videos have a privacy at the source the service has no match for" in output  # Unlisted

    mark = time.time()
    code, output = _migrate(emu, f"youtube-takeout:{folder}", tmp_path)
    assert code == 0, output
    assert creates(emu_control, emu, since=mark) == []


def test_takeout_zip_migrates(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    folder = make_takeout(tmp_path / "export", clip_factory, [("vidZ1234567", "Zipped", "Public")])
    archive = zip_takeout(folder, tmp_path / "takeout-20260101.zip")
    code, output = _migrate(emu, f"youtube-takeout:{archive}", tmp_path)
    assert code == 0, output
    assert [v["title"] for v in emu_control.videos(emu)] == ["Zipped"]
    assert (tmp_path / "takeout-20260101.unpacked").is_dir()


def test_a_takeout_without_videos_csv_exits_2(tmp_path: Path, emu: Workspace) -> None:
    (tmp_path / "empty").mkdir()
    code, output = _migrate(emu, f"youtube-takeout:{tmp_path / 'empty'}", tmp_path)
    assert code == 2, output
    assert "no 'video metadata/videos.csv' in it" in output


def test_a_kill_9_mid_run_then_a_rerun_makes_one_video_each(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    folder = make_takeout(
        tmp_path / "export", clip_factory, [(f"vidK{i:07d}", f"Clip {i}", "Public") for i in range(4)]
    )
    ledger = tmp_path / "ledger.db"
    args = [
        "migrate",
        f"youtube-takeout:{folder}",
        "--parent-id",
        emu.project_id,
        "--ledger",
        str(ledger),
        "--wait-timeout",
        "120",
        "--transfers",
        "2",
        "--chunk-mib",
        "1",
    ]
    emu_control.set_faults(emu, [{"kind": "bandwidth", "bytes_per_second": 20_000}], seed=1)
    rerun = kill_then_rerun(
        args,
        cli_env(emu),
        ledger,
        ["uploading"],
        before_rerun=lambda: emu_control.clear_faults(emu),
        cwd=tmp_path,
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert sorted(v["title"] for v in emu_control.videos(emu)) == [f"Clip {i}" for i in range(4)]
    assert ledger_count(ledger, "finished") == 4
