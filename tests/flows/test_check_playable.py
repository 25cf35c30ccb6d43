"""check --playable through the command line: every migrated video done, with a play_link, and its duration
its source's (the inventory's duration column for platform items, probed from the file otherwise)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.flows.helpers import cli_env, options, run_cli, settings_for, write_inventory
from videoferry.emulator.control import Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.tasks.check.playable import tolerance


def test_a_done_video_shorter_than_its_source_is_a_finding(
    tmp_path: Path, emu: Workspace, clip_factory
) -> None:
    rows = [
        # the platform said 2 s and 2 s arrived; said 1 min but 2 s arrived (a cut-off download)
        {"key": "vimeo:1001", "source": str(clip_factory(2.0)), "title": "Whole", "duration": "2.0"},
        {"key": "vimeo:1002", "source": str(clip_factory(2.0)), "title": "Cut off", "duration": "0:01:00"},
        {"key": "", "source": str(clip_factory(2.0)), "title": "A file", "duration": ""},
    ]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    assert run_migration(options(inventory, emu, tmp_path), settings_for(emu)).exit_code == 0
    env = cli_env(emu)
    args = ["check", str(inventory), "--ledger", str(tmp_path / "ledger.db"), "--parent-id", emu.project_id]

    plain = run_cli(args, env)
    assert plain.returncode == 0, plain.stdout + plain.stderr  # bytes match: without --playable all is `=`

    report = tmp_path / "report"
    checked = run_cli([*args, "--playable", "--report", str(report)], env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = {line.split(" ", 2)[1]: line for line in checked.stdout.splitlines() if line[:2] in ("= ", "* ")}
    assert (
        lines["vimeo:1001"].startswith("= ") and "plays: 2.00 s, the source's 2.00 s" in lines["vimeo:1001"]
    )
    assert lines["vimeo:1002"].startswith("* ")
    assert "differs in playable" in lines["vimeo:1002"]
    assert (
        "does not play: duration 2.00 s, the source's 60.00 s (more than 1.20 s apart)" in lines["vimeo:1002"]
    )
    (file_line,) = [line for key, line in lines.items() if not key.startswith("vimeo:")]
    assert (
        file_line.startswith("= ") and "plays: 2.00 s, the source's 2.0" in file_line
    )  # probed from the file
    assert "playable (--playable): 1 migrated video(s) do not play" in checked.stdout

    document = json.loads((report / "check.json").read_text())
    assert document["summary"]["not_playable"] == 1
    (finding,) = [line for line in document["lines"] if "playable" in line["fields"]]
    assert finding["key"] == "vimeo:1002"


def test_tolerance_is_one_second_or_two_percent() -> None:
    assert tolerance(10.0) == 1.0
    assert tolerance(3600.0) == 72.0


def test_an_s3_source_is_probed_and_a_platform_item_needs_its_duration(
    tmp_path: Path, emu: Workspace, clip_factory, s3_bucket: str
) -> None:
    import boto3

    clip = clip_factory(3.0)
    boto3.client("s3").upload_file(str(clip), s3_bucket, "raw/lecture.mp4")
    rows = [
        {"key": "", "source": f"s3://{s3_bucket}/raw/lecture.mp4", "title": "From S3"},
        {"key": "wistia:abc123xyz", "source": str(clip_factory(1.0)), "title": "No duration given"},
    ]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    assert run_migration(options(inventory, emu, tmp_path), settings_for(emu)).exit_code == 0
    args = ["check", str(inventory), "--ledger", str(tmp_path / "ledger.db"), "--parent-id", emu.project_id]
    checked = run_cli([*args, "--playable"], cli_env(emu))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    (s3_line,) = [line for line in checked.stdout.splitlines() if '"From S3"' in line]
    assert s3_line.startswith("= ") and "plays: 3.00 s, the source's 3.0" in s3_line  # probed from S3
    (wistia,) = [line for line in checked.stdout.splitlines() if line.startswith("* wistia:abc123xyz")]
    assert "does not play: the inventory gives no duration for this platform item" in wistia
    assert "X-Amz" not in checked.stdout + checked.stderr  # the presigned probe link never shows


def test_a_video_apply_trimmed_is_not_held_to_its_source_duration(
    tmp_path: Path, emu: Workspace, clip_factory
) -> None:
    rows = [{"key": "lec-1", "source": str(clip_factory(3.0)), "title": "Trimmed on purpose"}]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    assert run_migration(options(inventory, emu, tmp_path), settings_for(emu)).exit_code == 0
    env = cli_env(emu)
    ledger = str(tmp_path / "ledger.db")
    ops = write_inventory(
        tmp_path / "ops.csv",
        [{"op": "cut", "id": "short", "target": "key:lec-1", "trim": '[{"start": 0, "length": 1}]'}],
    )
    applied = run_cli(["apply", str(ops), "--ledger", ledger], env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    checked = run_cli(
        ["check", str(inventory), "--ledger", ledger, "--parent-id", emu.project_id, "--playable"], env
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (line,) = [
        line for line in checked.stdout.splitlines() if line.startswith(("~ lec-1", "* lec-1", "= lec-1"))
    ]
    assert (
        line.startswith("~ ") and "plays: 1.00 s; duration not compared: this ledger's apply changed" in line
    )
