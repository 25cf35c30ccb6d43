"""videoferry backup against the emulator: the layout, the inventory migrate restores from, the round trip
(folder and moto S3) checked `=` in another workspace, incremental reruns, deletions kept and pruned."""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import stat
import time
from pathlib import Path
from typing import Any

import boto3
import polars as pl
import pytest

from tests.flows.backup_fixtures import (
    FAST,
    backup,
    make_library,
    md5_of,
    media_gets,
    restore_and_check,
    video_reads,
)
from tests.flows.helpers import settings_for
from videoferry.connectors.client import VideoClient
from videoferry.connectors.inventory import read_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.tasks.backup.index import MANIFEST_COLUMNS
from videoferry.tasks.backup.metadata import INVENTORY_COLUMNS


def _modes(root: Path) -> tuple[set[int], set[int]]:
    """The permission bits of every folder (the root included) and every file under root."""
    dirs = {stat.S_IMODE(root.stat().st_mode)}
    files: set[int] = set()
    for path in root.rglob("*"):
        (dirs if path.is_dir() else files).add(stat.S_IMODE(path.stat().st_mode))
    return dirs, files


def test_backup_to_a_folder_restores_into_another_workspace_and_checks_the_same(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=6)
    truth = {v["id"]: v for v in emu_control.videos(emu)}
    dest = tmp_path / "backup"
    outcome = backup(emu, str(dest), tmp_path / "backup.db", report_dir=str(tmp_path / "report"))
    assert outcome.exit_code == 0, outcome.reasons
    assert outcome.counts == {"copied": 6}
    assert outcome.bytes == sum(v["file_size"] for v in truth.values())

    # Layout: every video's original and metadata; inventory.csv, manifest.json and .parquet at the root.
    for video_id, video in truth.items():
        original = dest / "videos" / video_id / f"{video_id}.mp4"
        assert md5_of(original) == video["md5"] and original.stat().st_size == video["file_size"]
        metadata = json.loads((dest / "videos" / video_id / "metadata.json").read_text())
        assert metadata["id"] == video_id and metadata["title"] == video["title"]
        assert metadata["tags"] == video["tags"] and "download_link" not in json.dumps(metadata)
        assert "sig=" not in json.dumps(metadata)
    assert not list(dest.rglob("*.part"))
    dirs, files = _modes(dest)
    assert dirs == {0o700} and files == {0o600}

    # The inventory is one migrate takes as it is: no rejected row, no warning, migrate's columns only.
    with (dest / "inventory.csv").open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    assert tuple(header) == INVENTORY_COLUMNS
    inventory = read_inventory(str(dest / "inventory.csv"), default_parent_id=emu.project_id)
    assert inventory.errors == [] and inventory.warnings == [] and inventory.rows.height == 6
    specs = {Path(s.source).parent.name: s for s in inventory.specs()}
    for video_id, video in truth.items():
        spec = specs[video_id]
        assert spec.title == video["title"] and (spec.description or "") == video["description"]
        assert list(spec.tags or []) == video["tags"]
        assert [round(c.time * 1000) for c in spec.chapters or []] == [
            c["time"] for c in video["chapters"]["items"]
        ]
        assert spec.privacy_type == video["privacy_type"]
    rows = list(csv.DictReader((dest / "inventory.csv").open(encoding="utf-8", newline="")))
    assert all(not Path(r["source"]).is_absolute() for r in rows)  # relative: the folder can move

    # The manifest: every object with its md5, JSON and Parquet the same.
    manifest = json.loads((dest / "manifest.json").read_text())
    frame = pl.read_parquet(dest / "manifest.parquet")
    assert frame.columns == list(MANIFEST_COLUMNS)
    assert frame.to_dicts() == manifest["objects"]
    for obj in manifest["objects"]:
        assert (
            md5_of(dest / obj["path"]) == obj["md5"] and (dest / obj["path"]).stat().st_size == obj["bytes"]
        )
    kinds = sorted(o["kind"] for o in manifest["objects"])
    assert kinds.count("video") == 6 and kinds.count("metadata") == 6 and "inventory" in kinds
    assert {o["quality"] for o in manifest["objects"] if o["kind"] == "video"} == {"original"}
    report = json.loads((tmp_path / "report" / "backup.json").read_text())
    assert {v["state"] for v in report["videos"]} == {"copied"}
    assert (tmp_path / "report" / "backup.html").exists()

    # A rerun reads the list only: nothing downloaded, no video read, no file rewritten.
    before = {p: p.stat().st_mtime_ns for p in dest.rglob("*")}
    started = time.time()
    again = backup(emu, str(dest), tmp_path / "backup.db")
    assert again.exit_code == 0 and again.counts == {"unchanged": 6} and again.bytes == 0
    assert (
        not media_gets(emu_control, emu, since=started) and video_reads(emu_control, emu, since=started) == 0
    )
    assert {p: p.stat().st_mtime_ns for p in dest.rglob("*")} == before

    # The round trip: restored into another workspace from the inventory as it is, checked the same.
    checked = restore_and_check(tmp_path, emu_control, str(dest / "inventory.csv"))
    assert checked.exit_code == 0, [line.text() for line in checked.lines]
    assert [line.mark.value for line in checked.lines] == ["="] * 6
    assert {line.bytes_by for line in checked.lines} == {"md5"}


def test_backup_to_s3_restores_by_tus_and_by_url_import(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_bucket: str, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=5)
    truth = {v["id"]: v for v in emu_control.videos(emu)}
    to = f"s3://{s3_bucket}/nightly/"
    outcome = backup(emu, to, tmp_path / "backup.db")
    assert outcome.exit_code == 0 and outcome.counts == {"copied": 5}, outcome.reasons
    s3 = boto3.session.Session().client("s3", region_name="us-east-1")
    for video_id, video in truth.items():
        body = s3.get_object(Bucket=s3_bucket, Key=f"nightly/videos/{video_id}/{video_id}.mp4")["Body"].read()
        assert hashlib.md5(body).hexdigest() == video["md5"]
    assert s3.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    inventory = s3.get_object(Bucket=s3_bucket, Key="nightly/inventory.csv")["Body"].read().decode()
    sources = [r["source"] for r in csv.DictReader(inventory.splitlines())]
    assert sorted(sources) == sorted(f"s3://{s3_bucket}/nightly/videos/{v}/{v}.mp4" for v in truth)
    manifest = json.loads(s3.get_object(Bucket=s3_bucket, Key="nightly/manifest.json")["Body"].read())
    for obj in manifest["objects"]:
        body = s3.get_object(Bucket=s3_bucket, Key=f"nightly/{obj['path']}")["Body"].read()
        assert hashlib.md5(body).hexdigest() == obj["md5"]
    pl.read_parquet(s3.get_object(Bucket=s3_bucket, Key="nightly/manifest.parquet")["Body"].read())

    for via in ("tus", "url"):  # by the bytes through us, and by presigned URL (the service pulls them)
        checked = restore_and_check(tmp_path, emu_control, f"{to}inventory.csv", via=via)
        assert [line.mark.value for line in checked.lines] == ["="] * 5, [
            line.text() for line in checked.lines
        ]
        assert {line.bytes_by for line in checked.lines} == {"md5"}


def test_incremental_runs_copy_only_what_changed_keep_deleted_videos_and_prune_on_request(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    lib = make_library(tmp_path, emu_control, emu, clip_factory, n=4)
    dest, ledger = tmp_path / "b", tmp_path / "b.db"
    assert backup(emu, str(dest), ledger).counts == {"copied": 4}
    ids = sorted(v["id"] for v in emu_control.videos(emu))
    retitled, trimmed, deleted, untouched = ids
    with VideoClient.from_settings(settings_for(emu, **FAST)) as client:
        client.videos.update(retitled, title="Renamed — новое имя", tags=["changed"])
        client.videos.cut(trimmed, trim=[(0.0, 0.5)])  # the bytes change (written back, version + 1)
        client.videos.delete(deleted)
    deadline = time.monotonic() + 30
    while {v["id"]: v["status"] for v in emu_control.videos(emu)}.get(trimmed) != "done":
        assert time.monotonic() < deadline, "the cut video was not processed"
        time.sleep(0.05)
    started = time.time()
    second = backup(emu, str(dest), ledger)
    assert second.exit_code == 0, second.reasons
    assert second.counts == {"copied": 1, "updated": 1, "unchanged": 1, "deleted": 1}
    assert set(media_gets(emu_control, emu, since=started)) == {trimmed}  # only the changed bytes travel
    truth = {v["id"]: v for v in emu_control.videos(emu)}
    assert md5_of(dest / "videos" / trimmed / f"{trimmed}.mp4") == truth[trimmed]["md5"]
    assert json.loads((dest / "videos" / retitled / "metadata.json").read_text())["tags"] == ["changed"]
    # Deleted in the service: kept, marked in the manifest, listed in deleted.csv (restorable), not in
    # inventory.csv.
    assert (dest / "videos" / deleted / f"{deleted}.mp4").exists()
    manifest = json.loads((dest / "manifest.json").read_text())
    states = {o["video_id"]: o["state"] for o in manifest["objects"] if o["kind"] == "video"}
    assert states[deleted] == "deleted" and states[untouched] == "present"
    live = [r["source"] for r in csv.DictReader((dest / "inventory.csv").open(encoding="utf-8"))]
    kept = [r["source"] for r in csv.DictReader((dest / "deleted.csv").open(encoding="utf-8"))]
    assert kept == [f"videos/{deleted}/{deleted}.mp4"] and len(live) == 3
    titles = {r["title"] for r in csv.DictReader((dest / "inventory.csv").open(encoding="utf-8"))}
    assert "Renamed — новое имя" in titles

    third = backup(emu, str(dest), ledger)  # nothing new: the deleted one stays kept, no call for it
    assert third.counts == {"unchanged": 3, "deleted": 1}
    pruned = backup(emu, str(dest), ledger, prune=True)
    assert pruned.exit_code == 0 and pruned.counts == {"unchanged": 3, "pruned": 1}
    assert not (dest / "videos" / deleted / f"{deleted}.mp4").exists()
    assert not (dest / "deleted.csv").exists()
    assert deleted not in (dest / "manifest.json").read_text()
    assert backup(emu, str(dest), ledger, prune=True).counts == {"unchanged": 3}
    assert lib.ledger.exists()


def test_dry_run_names_what_a_run_would_do_and_writes_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    from videoferry.flows.backup.options import BackupOptions
    from videoferry.flows.backup.runner import preview_backup

    make_library(tmp_path, emu_control, emu, clip_factory, n=2)
    opts = BackupOptions(project=emu.project_id, to=str(tmp_path / "d"), ledger=str(tmp_path / "l.db"))
    lines = preview_backup(opts, settings_for(emu, **FAST))
    assert len(lines) == 2 and all(line.startswith("copy ") and "original" in line for line in lines)
    assert not (tmp_path / "d").exists() and not (tmp_path / "l.db").exists()
    assert backup(emu, str(tmp_path / "d"), tmp_path / "l.db").exit_code == 0
    assert all(line.startswith("keep ") for line in preview_backup(opts, settings_for(emu, **FAST)))


@pytest.mark.parametrize("bad", ["--project", "--part-mib", "--since", "--to", "retry_backoff"])
def test_options_that_cannot_work_are_refused(bad: str) -> None:
    from videoferry.connectors.config import ConfigError
    from videoferry.flows.backup.options import BackupOptions

    values: dict[str, Any] = {"project": "6f1c2a9e-0000-4000-8000-000000000001", "to": "s3://b/p/"}
    cases: dict[str, dict[str, Any]] = {
        "--project": {"project": "nope"},
        "--part-mib": {"part_size": 1},
        "--since": {"since": "x"},
        "--to": {"to": "s3://"},
        "retry_backoff": {"retry_backoff": 0},  # a deployment's parameter: retries back to back
    }
    with pytest.raises(ConfigError, match=bad):
        BackupOptions(**{**values, **cases[bad]}).check()


def test_no_link_token_or_title_reaches_logs_reports_or_the_ledger_report(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from videoferry.flows.ledger_report import report_only, summary_lines

    make_library(tmp_path, emu_control, emu, clip_factory, n=3)
    titles = [v["title"] for v in emu_control.videos(emu)]
    caplog.set_level(logging.DEBUG)
    outcome = backup(emu, str(tmp_path / "d"), tmp_path / "l.db", report_dir=str(tmp_path / "r"))
    assert outcome.exit_code == 0
    report, files = report_only(str(tmp_path / "l.db"), str(tmp_path / "lr"), ("csv", "json", "html"))
    shown = caplog.text + "".join(
        p.read_text() for p in [*(tmp_path / "r").iterdir()] if p.suffix != ".parquet"
    )
    shown += "".join(p.read_text() for p in files) + json.dumps(outcome.as_dict())
    assert summary_lines(report.summary)[-1].startswith("backup: 3 videos kept")
    for secret in (emu.token, "sig=", *titles):
        assert secret not in shown, secret
    manifest = (tmp_path / "d" / "manifest.json").read_text()
    assert "sig=" not in manifest and not any(t in manifest for t in titles)


def test_since_reads_only_what_changed_since_and_leaves_the_rest_as_kept(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=2)
    dest, ledger = str(tmp_path / "d"), tmp_path / "l.db"
    assert backup(emu, dest, ledger, since="1d").counts == {"copied": 2}  # made just now: inside the window
    first, second = sorted(v["id"] for v in emu_control.videos(emu))
    with VideoClient.from_settings(settings_for(emu, **FAST)) as client:
        client.videos.update(first, description="changed since")
        client.videos.copy(second)  # a new video
    started = time.time()
    future = backup(emu, dest, ledger, since="2999-01-01")  # nothing made or changed since: nothing read
    assert future.counts == {"unchanged": 2, "skipped": 1}
    assert video_reads(emu_control, emu, since=started) == 0
    assert backup(emu, dest, ledger, since="1h").counts == {"updated": 1, "unchanged": 1, "copied": 1}
