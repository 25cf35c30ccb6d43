"""videoferry setup against the emulator: a 40-room conference planned, applied, again, changed, pruned."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.flows.helpers import cli_env, run_cli, settings_for
from videoferry.connectors.client import VideoClient
from videoferry.connectors.config import Settings
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.setup.options import SetupOptions
from videoferry.flows.setup.runner import run_plan, run_up
from videoferry.state.ledger import Ledger

RATE = {"rate_per_second": 500, "rate_per_minute": 30000}
SECRET_ENV = {"YT_KEY": "yt-secret-key-0001", "ROOM_PW": "room-pass-777", "FB_KEY": "fb-secret-key-0002"}


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    """A workspace with room for a conference's calls in one test (limits raised on both sides)."""
    return emu_control.create_workspace(rate_per_second=500, rate_per_minute=30000)


@pytest.fixture()
def settings(ws: Workspace) -> Settings:
    return settings_for(ws, **RATE)


@pytest.fixture(autouse=True)
def secret_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)
    yield


def conference(ws: Workspace, rooms: int = 40) -> dict[str, Any]:
    """A conference: rooms with restreams and a code batch, some protected by a password or codes."""
    events: list[dict[str, Any]] = []
    for n in range(rooms):
        event: dict[str, Any] = {
            "name": f"Room {n:02d}",
            "type": "one-time",
            "scheduled_time": f"2027-03-{1 + n % 28:02d}T09:00:00Z",
            "presets": ["720p", "1080p"],
            "latency_mode": "reduced" if n % 2 else "standard",
            "chat_active": n % 3 == 0,
            "restreams": [{"name": "youtube", "url": "rtmp://yt.example/live2", "key": "${YT_KEY}"}],
            "unique_codes": [{"name": "attendees", "codes_amount": 3, "sessions_per_code": 2}],
        }
        if n % 4 == 0:
            event["restreams"].append(
                {"name": "facebook", "url": "rtmp://fb.example/rtmp", "key": "${FB_KEY}"}
            )
        if n % 5 == 1:
            del event["unique_codes"]
            event["privacy_share"] = {"password": "${ROOM_PW}"}
        if n % 7 == 2:
            event["privacy_type"] = "custom"
            event["privacy_domains"] = ["conf.example.com"]
        events.append(event)
    return {"parent_id": ws.project_id, "privacy_domains": ["conf.example.com"], "events": events}


def write(path: Path, data: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return str(path)


def writes(control: EmulatorControl, ws: Workspace, since: float) -> list[dict[str, Any]]:
    """The write calls (anything but GET) the workspace received since a time."""
    return [r for r in control.requests(ws.workspace_id, since=since) if r["method"] != "GET"]


def now(control: EmulatorControl, ws: Workspace) -> float:
    """A request-log time after every call so far."""
    log = control.requests(ws.workspace_id)
    return max((r["time"] for r in log), default=0.0) + 1e-6


def test_conference_up_again_change_prune(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data = conference(ws)
    file = write(tmp_path / "conference.yaml", data)
    ledger, outputs = str(tmp_path / "ledger.db"), str(tmp_path / "out")
    opts = SetupOptions(file=file, ledger=ledger, outputs=outputs)
    (tmp_path / "out" / "codes").mkdir(parents=True, mode=0o755)  # found open: tightened, not trusted
    (tmp_path / "out" / "codes").chmod(0o755)

    planned = run_plan(opts, settings)
    assert planned.exit_code == 0 and planned.counts["create"] == 1 + 40 + 32
    assert writes(emu_control, ws, 0) == []  # the plan made no write call
    assert run_plan(opts, settings, drift=True).exit_code == 1

    first = run_up(opts, settings)
    assert first.exit_code == 0, first.lines
    with VideoClient.from_settings(settings) as client:
        events = {e.name: e for e in client.live_events.iter_events(parent_id=ws.project_id)}
        assert len(events) == 40
        room4 = events["Room 04"]
        assert sorted(t.name or "" for t in room4.restreams or []) == ["facebook", "youtube"]
        assert [b.name for b in client.unique_codes.iter_batches(room4.id)] == ["attendees"]
        assert events["Room 01"].privacy_share is not None
        assert events["Room 01"].privacy_share.password == SECRET_ENV["ROOM_PW"]
        assert events["Room 03"].latency_mode == "reduced" and events["Room 03"].chat_active is True
    # outputs: 0600 files only, links and keys per event, the codes as the service gave them
    events_csv = Path(outputs) / "events.csv"
    assert stat.S_IMODE(events_csv.stat().st_mode) == 0o600
    assert room4.streamkey and room4.streamkey in events_csv.read_text()
    codes = sorted((Path(outputs) / "codes").rglob("*.csv"))
    assert len(codes) == 32 and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in codes)
    folders = [p for p in Path(outputs).rglob("*") if p.is_dir()]
    assert folders and {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}, folders
    assert codes[0].read_text().startswith("sep=,")
    assert not any(room4.streamkey in line for line in first.lines)

    # applied again: nothing to write
    mark = now(emu_control, ws)
    again = run_up(opts, settings)
    assert again.exit_code == 0 and again.counts == {"unchanged": 1 + 40 + 32 + 50}
    assert writes(emu_control, ws, mark) == []
    assert run_plan(opts, settings, drift=True).exit_code == 0

    # changed: only the changed fields are sent
    data["events"][3]["latency_mode"] = "standard"
    data["events"][6]["chat_active"] = False
    data["events"][5]["presets"] = ["1080p"]
    data["events"][8]["restreams"][0]["url"] = "rtmp://yt.example/other"
    data["events"][9]["unique_codes"].append({"name": "speakers", "codes_amount": 2})
    write(tmp_path / "conference.yaml", data)
    shown = "\n".join(run_plan(opts, settings).lines)
    assert "latency_mode: reduced -> standard" in shown and "url: rtmp://yt.example/live2 -> rtmp" in shown
    mark = now(emu_control, ws)
    changed = run_up(opts, settings)
    assert changed.exit_code == 0, changed.lines
    sent = writes(emu_control, ws, mark)
    assert sorted((r["method"], r["path"].split("/")[-1]) for r in sent) == sorted(
        [("PUT", events["Room 03"].id), ("PUT", events["Room 05"].id), ("PUT", events["Room 06"].id)]
        + [("POST", "unique-codes")]
        + [("PUT", (events["Room 08"].restreams or [])[0].id)]
    )
    with Ledger.open(ledger, create=False) as book:
        updates = {op.target_id: op.params["fields"] for op in book.ops(kind="update_event", status="done")}
    assert updates == {
        events["Room 03"].id: ["latency_mode"],
        events["Room 05"].id: ["presets"],
        events["Room 06"].id: ["chat_active"],
    }
    assert run_plan(opts, settings, drift=True).exit_code == 0

    # pruned: the rooms dropped from the file are deleted (only what setup made), with --prune only
    data["events"] = data["events"][:35]
    write(tmp_path / "conference.yaml", data)
    assert run_plan(opts, settings, drift=True).exit_code == 0  # without --prune a dropped room is not drift
    pruning = SetupOptions(file=file, ledger=ledger, outputs=outputs, prune=True)
    assert run_plan(pruning, settings).counts["delete"] == 5
    mark = now(emu_control, ws)
    assert run_up(pruning, settings).exit_code == 0
    assert [r["method"] for r in writes(emu_control, ws, mark)] == ["DELETE"] * 5
    with VideoClient.from_settings(settings) as client:
        assert len(list(client.live_events.iter_events(parent_id=ws.project_id))) == 35
    assert run_plan(pruning, settings, drift=True).exit_code == 0


def test_event_whose_stream_is_not_pending_is_not_updated(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data = conference(ws, rooms=2)
    file = write(tmp_path / "c.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    assert run_up(opts, settings).exit_code == 0
    with VideoClient.from_settings(settings) as client:
        room = next(e for e in client.live_events.iter_events(parent_id=ws.project_id) if e.name == "Room 00")
        client.live_events.enable(room.id)  # the ingest takes streams of enabled events only
    emu_control.broadcast(ws, room.id, seconds=1, qos=False)
    data["events"][0]["latency_mode"] = "reduced"
    write(tmp_path / "c.yaml", data)
    planned = run_plan(opts, settings)
    text = "\n".join(planned.lines)
    assert "blocked" in text and "stream is finished, not pending" in text
    mark = now(emu_control, ws)
    up = run_up(opts, settings)
    assert up.exit_code == 1 and any(line.startswith("skipped: event Room 00") for line in up.lines)
    assert writes(emu_control, ws, mark) == []
    assert run_plan(opts, settings, drift=True).exit_code == 1


def test_past_batch_date_refused_before_any_write(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data = conference(ws, rooms=1)
    data["events"][0]["unique_codes"] = [{"name": "late", "codes_amount": 1, "starts_at": "2020-01-01"}]
    file = write(tmp_path / "c.yaml", data)
    up = run_up(SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "o")), settings)
    assert up.exit_code == 2
    assert any("c.yaml:" in line and "unique_codes[0].starts_at: in the past" in line for line in up.lines)
    assert writes(emu_control, ws, 0) == []
    assert not os.path.exists(tmp_path / "o" / "events.csv")


def test_domains_and_drm_follow_the_file(
    tmp_path: Path, ws: Workspace, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRM_PW", "drm-pass-55")
    data: dict[str, Any] = {
        "privacy_domains": ["a.example.com", "b.example.com"],
        "drm": {
            "workspace": {
                "url": "http://127.0.0.1:9/cb",
                "username": "u",
                "password": "${DRM_PW}",
                "strict": True,
            },
            "projects": {ws.project_id: {"url": "http://127.0.0.1:9/p", "strict": False}},
        },
    }
    file = write(tmp_path / "ws.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "o"))
    assert run_up(opts, settings).exit_code == 0
    with VideoClient.from_settings(settings) as client:
        assert client.drm.get().password == "drm-pass-55" and client.drm.get(ws.project_id).strict is False
        client.privacy_domains.create("c.example.com")
    assert run_plan(opts, settings, drift=True).exit_code == 0  # an extra domain is drift only with --prune
    data["drm"]["workspace"]["strict"] = False
    write(tmp_path / "ws.yaml", data)
    shown = "\n".join(run_plan(opts, settings).lines)
    assert "strict: True -> False" in shown and "drm-pass" not in shown
    pruning = SetupOptions(file=file, ledger=opts.ledger, outputs=opts.outputs, prune=True)
    assert run_up(pruning, settings).exit_code == 0
    with VideoClient.from_settings(settings) as client:
        assert sorted(d.domain or "" for d in client.privacy_domains.iter_domains()) == [
            "a.example.com",
            "b.example.com",
        ]
        assert client.drm.get().strict is False
    assert run_plan(pruning, settings, drift=True).exit_code == 0


def test_up_without_outputs_says_where_the_keys_went(tmp_path: Path, ws: Workspace) -> None:
    file = write(tmp_path / "conference.yaml", conference(ws, rooms=2))
    done = run_cli(["setup", "up", file, "--ledger", str(tmp_path / "ledger.db")], cli_env(ws), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    where = tmp_path.resolve() / "setup-outputs"
    assert (where / "events.csv").exists()
    said = [line for line in done.stdout.splitlines() if line.startswith("outputs")]
    assert said == [
        f"outputs (play links, stream keys, codes; files mode 0600): 2 file(s) under {where} (the default:"
        " --outputs DIR|s3://BUCKET/PREFIX/ chooses)"
    ], done.stdout
