"""videoferry backup: kill -9 mid-copy then a rerun, a copy committed just before a crash adopted, the
service's variants (capped pages, no total, ignored filters, other id notations, no originals), the poster,
the Prefect flow and the command line."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import time
from pathlib import Path

import boto3
import pytest

from connectors.client import VideoClient
from connectors.download import Downloader
from connectors.models import Video
from emulator.control import EmulatorControl, Workspace
from state.ledger import Ledger
from tasks.backup.files import save_files
from tasks.backup.held import backup_key, destination_id
from tasks.backup.video import BackupContext
from tasks.destination import LocalDestination
from tests.flows.backup_fixtures import FAST, backup, make_library, md5_of, media_gets
from tests.flows.helpers import cli_argv, cli_env, run_cli, settings_for


def _s3():  # type: ignore[no-untyped-def]
    return boto3.session.Session().client("s3", region_name="us-east-1")


def _stored(bucket: str, prefix: str) -> dict[str, bytes]:
    client = _s3()
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            found[obj["Key"]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return found


def test_kill_9_mid_copy_then_a_rerun_completes_every_object_and_downloads_nothing_twice(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_bucket: str, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=5)
    truth = {v["id"]: v for v in emu_control.videos(emu)}
    ledger = tmp_path / "backup.db"
    args = ["backup", "--project", emu.project_id, "--to", f"s3://{s3_bucket}/b/", "--ledger", str(ledger)]
    args += ["--transfers", "1", "--no-prefect"]
    # Each download answers late: the kill lands while a copy is in flight, after some are complete.
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 700, "path": "^/media/"}])
    started = time.time()
    proc = subprocess.Popen(
        cli_argv(*args), env=cli_env(emu), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60

    def files() -> set[str]:
        return {k for k in _stored(s3_bucket, "b/videos/") if k.endswith(".mp4")}

    while time.monotonic() < deadline and proc.poll() is None:
        if len(files()) >= 2 and _s3().list_multipart_uploads(Bucket=s3_bucket).get("Uploads"):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    complete = {key.split("/")[2] for key in files()}
    assert 2 <= len(complete) < 5
    first = media_gets(emu_control, emu, since=started)

    emu_control.clear_faults(emu)
    rerun_started = time.time()
    rerun = run_cli(args, cli_env(emu), timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    again = media_gets(emu_control, emu, since=rerun_started)
    assert not set(again) & complete  # a complete object is never downloaded again
    assert all(again[v] == 1 for v in set(truth) - complete)  # the others once each
    assert all(first[v] == 1 for v in complete)
    assert _s3().list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []  # aborted, no parts left
    stored = _stored(s3_bucket, "b/")
    for video_id, video in truth.items():
        body = stored[f"b/videos/{video_id}/{video_id}.mp4"]
        assert hashlib.md5(body).hexdigest() == video["md5"] and len(body) == video["file_size"]
    manifest = json.loads(stored["b/manifest.json"])
    for obj in manifest["objects"]:
        assert hashlib.md5(stored[f"b/{obj['path']}"]).hexdigest() == obj["md5"]
    assert emu.token not in rerun.stdout + rerun.stderr and "sig=" not in rerun.stdout + rerun.stderr


def test_a_copy_committed_just_before_a_crash_is_adopted_not_downloaded_again(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=1)
    (video_id,) = [v["id"] for v in emu_control.videos(emu)]
    dest = tmp_path / "d"
    assert backup(emu, str(dest), tmp_path / "first.db").counts == {"copied": 1}
    key = backup_key(destination_id(str(dest.resolve())), video_id, "copy")
    with Ledger.open(tmp_path / "first.db") as ledger:
        (done,) = ledger.ops(op_key=key)
    # The ledger a run killed right after its copy was committed leaves: the intent, no outcome; and a
    # stale .part of an earlier attempt beside the complete file.
    with Ledger.open(tmp_path / "crashed.db") as ledger:
        run_id = ledger.start_run("backup")
        ledger.record_op_intent(
            None, "backup", dict(done.params), run_id=run_id, op_key=key, video_id=video_id
        )
    part = dest / "videos" / video_id / f"{video_id}.mp4.part"
    part.write_bytes(b"half")
    started = time.time()
    outcome = backup(emu, str(dest), tmp_path / "crashed.db")
    assert outcome.exit_code == 0 and outcome.counts == {"copied": 1} and outcome.bytes == 0
    assert not media_gets(emu_control, emu, since=started) and not part.exists()
    with Ledger.open(tmp_path / "crashed.db") as ledger:
        ops = ledger.ops(op_key=key)
    assert [op.status for op in ops] == ["done"] and ops[0].result["adopted"] is True


def test_every_page_under_capped_pages_no_total_ignored_filters_and_base58_ids(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=2)
    other_project, _ = emu_control.create_project(emu)
    with VideoClient.from_settings(settings_for(emu, **FAST)) as client:
        sources = [v["id"] for v in emu_control.videos(emu)]
        for n in range(23):  # 25 videos in the project: three pages of 10
            client.videos.copy(sources[n % 2])
        stray = client.videos.copy(sources[0], parent_id=other_project).id
    emu_control.set_variants(emu, ["page-cap-10", "no-total", "ignore-parent-filter", "ids-base58"])
    outcome = backup(emu, str(tmp_path / "d"), tmp_path / "d.db")
    assert outcome.exit_code == 0 and outcome.counts == {"copied": 25}, outcome.reasons
    kept = {p.name for p in (tmp_path / "d" / "videos").iterdir()}
    assert stray not in kept and len(kept) == 25
    assert backup(emu, str(tmp_path / "d"), tmp_path / "d.db").counts == {"unchanged": 25}


def test_an_account_without_originals_keeps_the_metadata_and_names_the_missing_file(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=2)
    emu_control.set_variants(emu, ["no-original"])  # the renditions have no download link in the emulator
    outcome = backup(emu, str(tmp_path / "d"), tmp_path / "d.db")
    assert outcome.exit_code == 1 and outcome.counts == {"failed": 2}
    assert all("no downloadable asset" in reason for reason in outcome.reasons)
    for video in emu_control.videos(emu):
        assert (tmp_path / "d" / "videos" / video["id"] / "metadata.json").exists()
    assert (tmp_path / "d" / "inventory.csv").read_text().count("\n") == 1  # header only: nothing restorable


def test_a_poster_with_a_link_is_copied_beside_the_video(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=1)
    settings = settings_for(emu, **FAST)
    with VideoClient.from_settings(settings) as client:
        (listed,) = list(client.videos.scan(project_id=emu.project_id))
        video = client.videos.get(listed.id)
    # The emulator serves no poster image: a link it does serve (the original's) stands in for one.
    original = next(a for a in video.assets or [] if a.quality == "original")
    data = {**video.model_dump(mode="json"), "poster": {"id": "p1", "original": original.download_link}}
    data["additional_materials"] = [{"id": "m-1", "original_name": "slides.pdf", "download_link": ""}]
    staged = Video.model_validate(data)
    dest = LocalDestination(tmp_path / "d")
    with Ledger.open(tmp_path / "l.db") as ledger, VideoClient.from_settings(settings) as client:
        downloader = Downloader(emu.base_url)
        ctx = BackupContext(
            ledger=ledger, run_id="run", client=client, dest=dest, dest_id="dest", downloader=downloader
        )
        saved, notes = save_files(ctx, staged)
        downloader.close()
    (poster,) = saved
    assert (
        poster["kind"] == "poster" and poster["path"] == f"videos/{video.id}/poster.jpg"
    )  # no suffix in the link
    assert poster["md5"] == original.md5 == md5_of(Path(poster["object_key"]))
    assert notes == ["materials shown without a link: 1 (not saved)"]  # not a file to fetch: noted


@pytest.mark.flow
def test_backup_flow_on_prefect_the_cli_and_its_refusals(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flows.backup.flow import backup_flow

    make_library(tmp_path, emu_control, emu, clip_factory, n=2)
    dest, ledger = tmp_path / "d", tmp_path / "l.db"
    base = ["backup", "--project", emu.project_id, "--to", str(dest), "--ledger", str(ledger)]
    dry = run_cli([*base, "--dry-run"], cli_env(emu))
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("copy ") == 2 and not dest.exists()
    bad = run_cli(["backup", "--project", "x", "--to", str(dest)], cli_env(emu))
    assert bad.returncode == 2 and "--project" in bad.stderr
    refused = run_cli([*base, "--no-prefect"], cli_env(emu, VIDEOFERRY_TOKEN="not-a-token"))
    assert refused.returncode == 2 and "not-a-token" not in refused.stdout + refused.stderr
    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    state = backup_flow(
        project=emu.project_id,
        to=str(dest),
        ledger=str(ledger),
        api_url=emu.base_url,
        upload_url=emu.upload_url,
        return_state=True,
    )
    assert state.is_completed()
    result = state.result()
    assert isinstance(result, dict) and result["counts"] == {"copied": 2}
    cli = run_cli([*base, "--no-prefect", "--report", str(tmp_path / "r")], cli_env(emu))
    assert cli.returncode == 0, cli.stderr
    assert "videos: 2 (2 unchanged), 0 bytes copied" in cli.stdout
    status = run_cli(["status", "--ledger", str(ledger)], cli_env())
    assert status.returncode == 0 and "backup: 2 videos kept" in status.stdout
    report = run_cli(["report", "--ledger", str(ledger), "--out", str(tmp_path / "lr")], cli_env())
    assert report.returncode == 0, report.stderr
    assert "Backed-up videos" in (tmp_path / "lr" / "report.html").read_text()
    assert (tmp_path / "lr" / "backup.csv").read_text().count("\n") == 3
