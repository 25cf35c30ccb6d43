"""archive's QoS walk over a broadcast longer than 12 hours: windows under the cap cover the whole stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from connectors.client import VideoClient
from emulator.control import EmulatorControl, Workspace
from tasks.archive.events import qos_windows
from tests.flows.helpers import settings_for
from tests.flows.test_archive import FAST, run, wait_status

HOURS = 20
BUCKET = timedelta(seconds=30)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def test_a_20_hour_broadcast_is_walked_in_windows_under_12_hours(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_limits(emu, **FAST)
    with VideoClient.from_settings(settings_for(emu, **FAST)) as client:
        event = client.live_events.create("Marathon", "one-time", parent_id=emu.project_id)
        client.live_events.enable(event.id)
        ran = emu_control.broadcast(emu, event.id, seconds=1, stream_seconds=HOURS * 3600, chat_messages=3)
        stream = client.live_events.get(event.id).stream
    assert stream is not None and stream.started_at is not None and stream.finished_at is not None
    started, finished = stream.started_at.astimezone(UTC), stream.finished_at.astimezone(UTC)
    assert finished - started == timedelta(hours=HOURS)
    wait_status(emu_control, emu, [ran["video_id"]])

    dest = tmp_path / "archive"
    outcome = run(emu, tmp_path, to=str(dest))
    assert outcome.exit_code == 0 and outcome.counts == {"archived": 1}, outcome
    qos = json.loads((dest / event.id / ran["stream_id"] / "qos.json").read_text())

    # the walk: the stream's whole lifetime, in windows of at most 12 hours that meet end to end
    assert (_time(qos["from"]), _time(qos["to"])) == (started, finished)
    asked = [
        r
        for r in emu_control.requests(emu.workspace_id)
        if r["method"] == "GET" and r["path"] == f"/v2/live/events/{event.id}/qos"
    ]
    windows = qos_windows(started, finished)  # what save_qos asked, window by window
    assert qos["windows"] == len(asked) == len(windows) == 2
    assert windows[0][0] <= started and windows[-1][1] == finished and windows[0][1] == windows[1][0]
    assert all(end - start <= timedelta(hours=12) for start, end in windows)

    # what the service gives: the last 12 hours of the stream (spec 4.5 caps every answer there), each
    # 30 s bucket once although the two windows' answers meet at an edge
    stamps = [_time(r["timestamp"]) for r in qos["qos"]]
    assert stamps == sorted(set(stamps))
    assert all(b - a == BUCKET for a, b in zip(stamps, stamps[1:], strict=False))
    assert finished - timedelta(hours=12) - BUCKET < stamps[0] <= finished - timedelta(hours=12) + BUCKET
    assert finished - BUCKET < stamps[-1] <= finished
    assert qos["session"]["country"] == "US"
    frame = pl.read_parquet(dest / event.id / ran["stream_id"] / "qos.parquet")
    assert frame.height == len(stamps)
