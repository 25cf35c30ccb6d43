"""videoferry archive against the emulator's broadcasts and moto's S3: layout, verification, exactly once."""

from __future__ import annotations

import hashlib
import json
import logging
import stat
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import polars as pl
import pytest

from tests.flows.helpers import cli_env, run_cli, settings_for
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.archive.options import ArchiveOptions
from videoferry.flows.archive.runner import run_archive
from videoferry.flows.job import CopyOutcome
from videoferry.state.ledger import Ledger
from videoferry.tasks.archive.report import archive_lines, archive_summary

#: Tests raise the workspace's limits (and the client's) so they run in seconds; the crash test keeps 10/300.
FAST = {"rate_per_second": 200, "rate_per_minute": 12000}


@dataclass
class World:
    """Events broadcast in one workspace: event id -> [(stream_id, video_id)]."""

    ws: Workspace
    streams: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    restream_key: str = "rs-key-SECRET-4711"

    @property
    def videos(self) -> list[str]:
        return [v for pairs in self.streams.values() for _, v in pairs]


def wait_status(control: EmulatorControl, ws: Workspace, ids: list[str], status: str = "done") -> None:
    """Poll the emulator (bounded) until every video has the status."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen = {v["id"]: v["status"] for v in control.videos(ws)}
        if all(seen.get(i) == status for i in ids):
            return
        time.sleep(0.05)
    raise AssertionError(f"videos not {status}: {seen}")


def broadcast_world(
    control: EmulatorControl, ws: Workspace, plan: dict[str, int], *, wait: bool = True, chat: int = 6
) -> World:
    """One event per name in plan (recurring when it streams more than once), each broadcast that often."""
    world = World(ws)
    control.set_limits(ws, **FAST)
    with VideoClient.from_settings(settings_for(ws, **FAST)) as client:
        for name, times in plan.items():
            kind = "recurring" if times > 1 else "one-time"
            event = client.live_events.create(
                name,
                kind,
                parent_id=ws.project_id,
                restreams=[{"name": "yt", "url": "rtmp://127.0.0.1/live", "key": world.restream_key}],
            )
            client.live_events.enable(event.id)  # the ingest takes streams of enabled events only
            pairs = []
            for _ in range(times):
                answer = control.broadcast(ws, event.id, seconds=2, chat_messages=chat)
                pairs.append((answer["stream_id"], answer["video_id"]))
            world.streams[event.id] = pairs
    if wait:
        wait_status(control, ws, world.videos)
    return world


def s3() -> Any:
    return boto3.session.Session().client("s3", region_name="us-east-1")


def objects(bucket: str) -> dict[str, bytes]:
    client = s3()
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


def stored(control: EmulatorControl, ws: Workspace) -> dict[str, dict[str, Any]]:
    return {v["id"]: v for v in control.videos(ws)}


def run(ws: Workspace, tmp: Path, **changes: Any) -> CopyOutcome:
    values: dict[str, Any] = {
        "to": "",
        "project": ws.project_id,
        "ledger": str(tmp / "ledger.db"),
        "retry_backoff": 0.1,
        **changes,
    }
    return run_archive(ArchiveOptions(**values), settings_for(ws, **FAST))


def test_archive_to_s3_layout_manifest_chat_qos_and_a_rerun_that_does_nothing(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    s3_bucket: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = broadcast_world(emu_control, emu, {"Weekly show": 3, "Launch": 1, "Town hall": 2})
    caplog.set_level(logging.DEBUG)
    started = time.time()
    to = f"s3://{s3_bucket}/archive/"
    outcome = run(emu, tmp_path, to=to, report_dir=str(tmp_path / "report"))
    assert outcome.exit_code == 0, outcome
    assert outcome.counts == {"archived": 6}

    files = objects(s3_bucket)
    truth = stored(emu_control, emu)
    for event_id, pairs in world.streams.items():
        manifest = json.loads(files[f"archive/{event_id}/manifest.json"])
        assert {r["video_id"] for r in manifest["recordings"]} == {v for _, v in pairs}
        frame = pl.read_parquet(files[f"archive/{event_id}/manifest.parquet"])
        assert frame.height == len(pairs)
        for stream_id, video_id in pairs:
            body = files[f"archive/{event_id}/{stream_id}/{video_id}.mp4"]
            assert len(body) == truth[video_id]["file_size"]
            assert hashlib.md5(body).hexdigest() == truth[video_id]["md5"]
            chat = json.loads(files[f"archive/{event_id}/{stream_id}/chat.json"])
            assert len(chat["data"]) == 6
            assert files[f"archive/{event_id}/{stream_id}/chat.csv"].startswith(b"id,username")
            assert files[f"archive/{event_id}/{stream_id}/chat.txt"].count(b"\n") == 6
            qos = json.loads(files[f"archive/{event_id}/{stream_id}/qos.json"])
            assert qos["session"]["country"] == "US" and qos["qos"]
            assert pl.read_parquet(files[f"archive/{event_id}/{stream_id}/qos.parquet"]).height == len(
                qos["qos"]
            )
    # nothing tidied by default, nothing deleted
    assert set(world.videos) <= set(truth)
    # no secrets anywhere we wrote
    written = b"".join(files.values()) + b"".join(p.read_bytes() for p in (tmp_path / "report").iterdir())
    with VideoClient.from_settings(settings_for(emu, **FAST)) as client:
        stream_keys = [client.live_events.get(event_id).streamkey or "" for event_id in world.streams]
    assert all(stream_keys)
    for secret in (emu.token, world.restream_key, "sig=", *stream_keys):
        assert secret.encode() not in written
        assert secret not in caplog.text and secret not in repr(outcome)
    log = emu_control.requests(emu.workspace_id, since=started)
    assert not [r for r in log if r["status"] == 429]
    assert len([r for r in log if r["path"].startswith("/media/")]) == 6  # each recording downloaded once

    second = time.time()
    again = run(emu, tmp_path, to=to)
    assert again.exit_code == 0 and again.counts == {"already": 6} and again.bytes == 0
    calls = {r["path"] for r in emu_control.requests(emu.workspace_id, since=second)}
    assert all(p.startswith("/v2/live/events") and p.endswith(("/videos", "/events")) for p in calls), calls
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        copies = [op for op in ledger.ops(kind="archive") if (op.op_key or "").endswith(":copy")]
        assert len(copies) == 6  # one copy per recording over both runs
        manifests = [op for op in ledger.ops(kind="archive") if (op.op_key or "").endswith(":manifest")]
    assert len(manifests) == 3  # one manifest write per event: the rerun changed nothing
    # `videoferry status` shows the archive beside items and operations (the ledger only, no API call).
    shown = run_cli(["status", "--ledger", str(tmp_path / "ledger.db")], cli_env())
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "archive: 6 recordings archived" in shown.stdout
    # `videoferry report` carries them too: a table of the archived recordings, bytes per event in the HTML.
    out = tmp_path / "ledger-report"
    made = run_cli(["report", "--ledger", str(tmp_path / "ledger.db"), "--out", str(out)], cli_env())
    assert made.returncode == 0, made.stdout + made.stderr
    table = pl.read_csv(out / "archive.csv")
    assert table.height == 6 and set(table["video_id"]) == set(truth)
    assert table["bytes"].sum() == sum(truth[v]["file_size"] for v in truth)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Archived bytes per event" in page
    # the page is the archive's (not "migration report, 0 of 0 items"), with its run and destination
    assert "<h1>videoferry archive report</h1>" in page and "0 of 0 items" not in page
    assert f"destination: archive {to}" in page
    # archive --report writes HTML like every job's report
    run_page = (tmp_path / "report" / "archive.html").read_text(encoding="utf-8")
    assert "<p>6 archived.</p>" in run_page and run_page.count("<tr>") == 1 + 6
    assert len(json.loads((out / "report.json").read_text())["archive"]) == 6
    assert emu.token not in page


def test_processing_recording_waits_for_the_next_run_then_tidy_after_verified_copy(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    world = broadcast_world(emu_control, emu, {"Morning": 1})
    emu_control.set_processing(emu, "manual")
    late = broadcast_world(emu_control, emu, {"Evening": 1}, wait=False)
    wait_status(emu_control, emu, late.videos, "processing")
    project, folder = emu_control.create_project(emu)
    dest = tmp_path / "dest"
    first = run(emu, tmp_path, to=str(dest), move_to=project, tags=["archived"], delete_after_archive=False)
    assert first.exit_code == 0 and first.counts == {"archived": 1, "pending": 1}
    truth = stored(emu_control, emu)
    (event_id, [(stream_id, video_id)]) = next(iter(world.streams.items()))
    copy = dest / event_id / stream_id / f"{video_id}.mp4"
    assert hashlib.md5(copy.read_bytes()).hexdigest() == truth[video_id]["md5"]
    assert truth[video_id]["project_id"] == project
    assert not list(dest.rglob("*.part"))

    emu_control.set_video_status(emu, late.videos[0], "done")
    second = run(emu, tmp_path, to=str(dest), move_to=project, tags=["archived"], delete_after_archive=True)
    assert second.exit_code == 0 and second.counts == {"archived": 2}
    truth = stored(emu_control, emu)
    assert late.videos[0] not in truth and video_id not in truth  # deleted only now, after verified copies
    (late_event, [(late_stream, late_video)]) = next(iter(late.streams.items()))
    assert (dest / late_event / late_stream / f"{late_video}.mp4").stat().st_size > 0
    assert (
        json.loads((dest / late_event / "manifest.json").read_text())["recordings"][0]["video_id"]
        == late_video
    )
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        summary = archive_summary(ledger)
    assert summary is not None and summary["recordings"] == 2 and summary["failed"] == []
    assert summary["steps"] == {"copy": 2, "sidecars": 2, "move": 2, "tags": 2, "delete": 2}
    assert archive_lines(summary)[0].startswith("archive: 2 recordings archived")


def test_a_local_archive_is_private_and_an_open_folder_found_is_tightened(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    """Recordings, chat (user names, messages) and QoS (client IPs): files 0600 in folders 0700 below the
    folder named, an event's folder found open (0755, its old files 0644) tightened, not trusted."""
    world = broadcast_world(emu_control, emu, {"Morning": 1, "Evening": 1})
    dest = tmp_path / "dest"
    opened = dest / next(iter(world.streams))
    opened.mkdir(parents=True)
    (opened / "notes.txt").write_text("a file of someone else's")
    opened.chmod(0o755)
    outcome = run(emu, tmp_path, to=str(dest))
    assert outcome.exit_code == 0 and outcome.counts == {"archived": 2}
    written = [p for p in dest.rglob("*") if p.is_file() and p.name != "notes.txt"]
    names = {p.name for p in written}
    assert any("chat" in n for n in names) and any("qos" in n for n in names), names
    assert {stat.S_IMODE(p.stat().st_mode) for p in written} == {0o600}
    folders = [p for p in dest.rglob("*") if p.is_dir()]
    assert opened in folders and {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}


def test_missing_original_fails_the_recording_and_leaves_it_untouched(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_bucket: str
) -> None:
    world = broadcast_world(emu_control, emu, {"No original": 1})
    emu_control.set_variants(emu, ["no-original"])
    outcome = run(emu, tmp_path, to=f"s3://{s3_bucket}/a", delete_after_archive=True)
    assert outcome.exit_code == 1 and outcome.counts == {"failed": 1}
    assert "no downloadable asset" in outcome.reasons[0]
    assert set(world.videos) <= set(stored(emu_control, emu))  # not deleted
    assert not [k for k in objects(s3_bucket) if k.endswith(".mp4")]


def test_faults_during_the_copy_and_the_tidy_are_retried_and_never_leave_a_partial_object(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_bucket: str
) -> None:
    world = broadcast_world(emu_control, emu, {"Flaky": 2})
    truth = stored(emu_control, emu)
    emu_control.set_faults(
        emu,
        [
            {"kind": "error", "status": 503, "path": "^/media/", "times": 2},
            {"kind": "drop_after_commit", "path": "^/media/", "times": 1},
            {"kind": "error", "status": 502, "path": "/qos$", "times": 1},
            {"kind": "error", "status": 500, "path": "/chat.csv$", "times": 1},
            {"kind": "drop_after_commit", "method": "DELETE", "path": "^/v1/videos/", "times": 1},
        ],
        seed=3,
    )
    outcome = run(emu, tmp_path, to=f"s3://{s3_bucket}/f", delete_after_archive=True)
    assert outcome.exit_code == 0, outcome
    assert outcome.counts == {"archived": 2}
    assert not set(world.videos) & set(stored(emu_control, emu))  # a DELETE answered by a drop counts too
    files = objects(s3_bucket)
    for event_id, pairs in world.streams.items():
        for stream_id, video_id in pairs:
            body = files[f"f/{event_id}/{stream_id}/{video_id}.mp4"]
            assert hashlib.md5(body).hexdigest() == truth[video_id]["md5"]
    assert s3().list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []


def test_a_copy_that_keeps_failing_is_reported_and_nothing_is_deleted(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    world = broadcast_world(emu_control, emu, {"Broken": 1})
    emu_control.set_faults(emu, [{"kind": "error", "status": 503, "path": "^/media/"}])
    dest = tmp_path / "d"
    outcome = run(emu, tmp_path, to=str(dest), delete_after_archive=True)
    assert outcome.exit_code == 1 and outcome.counts == {"failed": 1}
    assert "HTTP 503" in outcome.reasons[0] and "sig=" not in outcome.reasons[0]
    assert set(world.videos) <= set(stored(emu_control, emu))
    assert not [p for p in dest.rglob("*") if p.is_file()]
    emu_control.clear_faults(emu)
    assert run(emu, tmp_path, to=str(dest), delete_after_archive=True).counts == {"archived": 1}
    assert not set(world.videos) & set(stored(emu_control, emu))


@pytest.mark.parametrize(
    "bad", [{"events": ["x"], "project": "p"}, {"quality": "4k"}, {"since": "yesterday"}]
)
def test_bad_options_are_configuration_errors(tmp_path: Path, emu: Workspace, bad: dict[str, Any]) -> None:
    from videoferry.flows.job import ConfigError

    with pytest.raises(ConfigError):
        run(emu, tmp_path, to=str(tmp_path), **bad)


def test_since_and_event_ids_select_what_is_archived(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    world = broadcast_world(emu_control, emu, {"First": 1, "Second": 1})
    dest = str(tmp_path / "d")
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    nothing = run(emu, tmp_path, to=dest, since=tomorrow)
    assert nothing.exit_code == 0 and nothing.counts == {}
    assert run(emu, tmp_path, to=dest, since="1h", report_dir=str(tmp_path / "r")).counts == {"archived": 2}
    assert pl.read_csv(tmp_path / "r" / "archive.csv")["state"].to_list() == ["archived", "archived"]
    first = next(iter(world.streams))
    one = run(
        emu, tmp_path / "other", to=str(tmp_path / "e"), project=None, events=[first], since="2020-01-01"
    )
    assert one.counts == {"archived": 1}
    assert [p.name for p in (tmp_path / "e").iterdir()] == [first]
    from videoferry.flows.job import ConfigError

    with pytest.raises(ConfigError, match="does not exist"):
        run(emu, tmp_path, to=dest, project=None, events=["0" * 32])


def test_a_recurring_event_with_its_next_stream_scheduled_is_archived_stream_by_stream(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    world = broadcast_world(emu_control, emu, {"Weekly": 2})
    (event_id, pairs) = next(iter(world.streams.items()))
    between = datetime.now(UTC)
    third = emu_control.broadcast(emu, event_id, seconds=2, chat_messages=1)
    wait_status(emu_control, emu, [third["video_id"]])
    with VideoClient.from_settings(settings_for(emu, **FAST)) as client:
        client.live_events.schedule_stream(event_id, datetime.now(UTC) + timedelta(days=7))
        assert client.live_events.get(event_id).stream.is_pending  # type: ignore[union-attr]
    dest = tmp_path / "d"
    recent = run(emu, tmp_path, to=str(dest), since=between.isoformat())
    assert recent.counts == {"archived": 1}
    assert [p.name for p in (dest / event_id).iterdir() if p.is_dir()] == [third["stream_id"]]
    every = run(emu, tmp_path, to=str(dest))
    assert every.counts == {"already": 1, "archived": 2}
    streams = {p.name for p in (dest / event_id).iterdir() if p.is_dir()}
    assert streams == {s for s, _ in pairs} | {third["stream_id"]}
    for stream_id in streams:  # every stream's QoS found, also where its lifetime is estimated
        assert json.loads((dest / event_id / stream_id / "qos.json").read_text())["qos"]
