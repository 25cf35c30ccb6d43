"""setup up under lost answers and crashes: every event, target and batch exists exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.flows.test_setup import SECRET_ENV, conference, now, write, writes
from videoferry.connectors.client import VideoClient
from videoferry.connectors.client.live_models import RestreamTarget
from videoferry.connectors.config import Settings
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.setup.options import SetupOptions
from videoferry.flows.setup.runner import run_plan, run_up
from videoferry.state.ledger import Ledger


@pytest.fixture(autouse=True)
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=500, rate_per_minute=30000)


@pytest.fixture()
def settings(ws: Workspace) -> Settings:
    return Settings(ws.base_url, ws.upload_url, ws.token, rate_per_second=500, rate_per_minute=30000)


def drop(path: str, times: int, method: str = "POST") -> dict[str, object]:
    return {"kind": "drop_after_commit", "method": method, "path": path, "times": times}


def test_lost_answers_make_no_duplicates(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data = conference(ws, rooms=6)
    file = write(tmp_path / "c.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    emu_control.set_faults(
        ws,
        [
            drop("^/v2/live/events$", 3),
            drop("/unique-codes$", 2),
            drop("^/v1/privacy-domains$", 1),
            drop("^/v2/live/events/[^/]+$", 1, "PUT"),
        ],
    )
    assert run_up(opts, settings).exit_code == 0
    # a second round: a new target and a change on existing events, their answers lost too
    for event in data["events"]:
        event["restreams"].append({"name": "twitch", "url": "rtmp://tw.example/app", "key": "${YT_KEY}"})
    data["events"][0]["latency_mode"] = "reduced"
    write(tmp_path / "c.yaml", data)
    emu_control.set_faults(ws, [drop("/restreams$", 2), drop("^/v2/live/events/[^/]+$", 1, "PUT")])
    assert run_up(opts, settings).exit_code == 0
    emu_control.clear_faults(ws)
    dropped = Counter(
        (r["method"], r["path"].split("/")[-1]) for r in emu_control.requests(ws.workspace_id) if r["dropped"]
    )
    assert dropped[("POST", "events")] == 3 and dropped[("POST", "unique-codes")] == 2
    assert dropped[("POST", "restreams")] == 2 and dropped[("POST", "privacy-domains")] == 1
    assert sum(n for (method, _), n in dropped.items() if method == "PUT") == 1  # the update, sent again

    with VideoClient.from_settings(settings) as client:
        events = list(client.live_events.iter_events(parent_id=ws.project_id))
        assert Counter(e.name for e in events) == Counter(f"Room {n:02d}" for n in range(6))
        for event in events:
            names = [t.name for t in client.restreams.list_restreams(event.id)]
            assert len(names) == len(set(names)) and "twitch" in names
            batches = [b.name for b in client.unique_codes.iter_batches(event.id)]
            assert len(batches) == len(set(batches))
        assert [d.domain for d in client.privacy_domains.iter_domains()] == ["conf.example.com"]
        assert next(e for e in events if e.name == "Room 00").latency_mode == "reduced"
    with Ledger.open(opts.ledger, create=False) as book:
        assert book.pending_ops() == []
        creates = book.ops(kind="create_event", status="done")
        assert sorted(op.params["name"] for op in creates) == [f"Room {n:02d}" for n in range(6)]
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    assert writes(emu_control, ws, mark) == []
    assert run_plan(opts, settings, drift=True).exit_code == 0


def test_a_crash_between_create_and_outcome_is_found_by_listing(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data = conference(ws, rooms=1)
    file = write(tmp_path / "c.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    scope = f"{ws.project_id}/Room 00"
    # the run that crashed: its intent is written, the event made, the outcome never recorded
    with Ledger.open(opts.ledger) as book:
        run = book.start_run("setup up")
        book.record_op_intent(
            None,
            "create_event",
            {"name": "Room 00", "parent_id": ws.project_id},
            run_id=run,
            op_key=f"setup:event:{scope}",
        )
        book.finish_run(run, "interrupted")
    with VideoClient.from_settings(settings) as client:
        made = client.live_events.create(
            "Room 00",
            "one-time",
            parent_id=ws.project_id,
            restreams=[RestreamTarget("youtube", "rtmp://yt.example/live2", SECRET_ENV["YT_KEY"])],
        )
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    assert not any(r["path"] == "/v2/live/events" for r in writes(emu_control, ws, mark))
    with Ledger.open(opts.ledger, create=False) as book:
        (op,) = book.ops(op_key=f"setup:event:{scope}")
        assert op.status == "done" and op.created_id == made.id
    with VideoClient.from_settings(settings) as client:
        assert [e.id for e in client.live_events.iter_events(parent_id=ws.project_id)] == [made.id]
