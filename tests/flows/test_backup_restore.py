"""videoferry backup and its restore as a person runs them: folders come back, the poster is kept (and a
poster link that fails is said), metadata.json keeps no link."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.flows.backup_fixtures import FAST
from tests.flows.helpers import cli_env, clip_rows, options, run_cli, settings_for, write_inventory
from videoferry.connectors.client import VideoClient
from videoferry.connectors.ids import same_id
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration


def _library(tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory) -> dict[str, str]:
    """Two clips migrated: one at the top of the project, one in its folder; {title: where}."""
    emu_control.set_limits(emu, **FAST)
    rows = clip_rows(clip_factory, 2, metadata=False)
    rows[0]["parent_id"] = emu.project_id
    rows[1]["parent_id"] = emu.folder_id
    inventory = write_inventory(tmp_path / "source.csv", rows)
    done = run_migration(options(inventory, emu, tmp_path, parent_id=None), settings_for(emu, **FAST))
    assert done.exit_code == 0, done.reasons
    return {rows[0]["title"]: "", rows[1]["title"]: emu.folder_id}


def _backup(emu: Workspace, dest: Path, tmp_path: Path) -> tuple[int, str]:
    args = ["backup", "--project", emu.project_id, "--to", str(dest), "--ledger", str(tmp_path / "b.db")]
    done = run_cli([*args, "--report", str(tmp_path / "report"), "--no-prefect"], cli_env(emu))
    return done.returncode, done.stdout + done.stderr


def test_a_restore_puts_every_video_back_in_its_folder_with_poster_and_no_link_kept(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    where = _library(tmp_path, emu, emu_control, clip_factory)
    dest = tmp_path / "backup"
    code, out = _backup(emu, dest, tmp_path)
    assert code == 0, out
    rows = list(csv.DictReader((dest / "inventory.csv").open(encoding="utf-8", newline="")))
    assert {r["title"]: r["parent_id"] for r in rows} == where  # the folder kept, the top left to --parent-id
    for video in emu_control.videos(emu):
        folder = dest / "videos" / video["id"]
        assert (folder / "poster.jpg").read_bytes()[:3] == b"\xff\xd8\xff"  # a JPEG
        text = (folder / "metadata.json").read_text(encoding="utf-8")
        assert "://" not in text, text  # no player, HLS or poster link (README: "without links")
        document = json.loads(text)
        assert not {"play_link", "embed_link", "hls_link"} & set(document)
        assert document["poster"]["id"] and "original" not in document["poster"]
    manifest = json.loads((dest / "manifest.json").read_text())
    assert sum(1 for o in manifest["objects"] if o["kind"] == "poster") == 2

    # The library is lost; the restore from the backup as it is brings each video back where it was.
    with VideoClient.from_settings(settings_for(emu, **FAST)) as client:
        for video in emu_control.videos(emu):
            client.videos.delete(video["id"])
    inventory = str(dest / "inventory.csv")
    restore = ["--parent-id", emu.project_id, "--ledger", str(tmp_path / "restore.db"), "--no-prefect"]
    done = run_cli(["migrate", inventory, *restore, "--wait-timeout", "120"], cli_env(emu))
    assert done.returncode == 0, done.stdout + done.stderr
    live = [v for v in emu_control.videos(emu) if not v.get("deleted_at")]
    assert len(live) == 2
    for video in live:
        folder = where[video["title"]]
        assert same_id(video["folder_id"], folder) if folder else not video["folder_id"], video
        assert same_id(video["project_id"], emu.project_id)
    checked = run_cli(["check", inventory, *restore[:-1]], cli_env(emu))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_poster_link_that_fails_is_said_in_the_summary_and_the_report(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    _library(tmp_path, emu, emu_control, clip_factory)
    emu_control.set_faults(emu, [{"kind": "error", "status": 403, "path": "^/media/[^/]+/posters/"}])
    dest = tmp_path / "backup"
    code, out = _backup(emu, dest, tmp_path)
    assert code == 0, out  # the videos are backed up: the poster is not their failure
    ids = [v["id"] for v in emu_control.videos(emu)]
    for video_id in ids:
        assert f"warning: {video_id}: poster poster.jpg not saved: its link answered HTTP 403" in out
        assert not (dest / "videos" / video_id / "poster.jpg").exists()
    assert "2 video(s) backed up without some of their files" in out
    report = json.loads((tmp_path / "report" / "backup.json").read_text())
    notes = {v["video_id"]: v["notes"] for v in report["videos"]}
    assert all("poster poster.jpg not saved" in notes[video_id] for video_id in ids)
    assert "sig=" not in out and emu.token not in out


def test_a_restore_into_another_workspace_maps_the_folders_it_lacks(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    where = _library(tmp_path, emu, emu_control, clip_factory)
    dest = tmp_path / "backup"
    code, out = _backup(emu, dest, tmp_path)
    assert code == 0, out
    assert json.loads((dest / "manifest.json").read_text())["folders"] == [emu.folder_id]
    other = emu_control.create_workspace()
    emu_control.set_limits(other, **FAST)
    inventory = str(dest / "inventory.csv")
    into = ["--parent-id", other.project_id, "--ledger", str(tmp_path / "restore.db")]
    mapped = [*into, "--parent-map", f"{emu.folder_id}={other.folder_id}"]
    done = run_cli(["migrate", inventory, *mapped, "--no-prefect", "--wait-timeout", "120"], cli_env(other))
    assert done.returncode == 0, done.stdout + done.stderr
    restored = {v["title"]: v for v in emu_control.videos(other)}
    assert set(restored) == set(where)
    for title, folder in where.items():
        video = restored[title]
        assert same_id(video["folder_id"], other.folder_id) if folder else not video["folder_id"], video
    checked = run_cli(["check", inventory, *mapped], cli_env(other))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert other.token not in done.stdout + done.stderr + checked.stdout + checked.stderr
