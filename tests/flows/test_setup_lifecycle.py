"""setup and an event's lifecycle against the emulator: enabled, broadcast, the next stream, completed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows import test_setup
from tests.flows.test_setup import now, write, writes
from videoferry.connectors.client import VideoClient
from videoferry.connectors.config import Settings
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.setup.options import SetupOptions
from videoferry.flows.setup.runner import run_plan, run_up
from videoferry.state.ledger import Ledger

#: The workspace (limits raised) and its settings: test_setup's fixtures.
ws, settings = test_setup.ws, test_setup.settings

NEXT = "2031-06-07T18:00:00Z"
LATER = "2031-06-14T18:00:00Z"


def weekly(ws: Workspace, **fields: Any) -> dict[str, Any]:
    """One recurring event (a weekly show) with the given lifecycle fields."""
    return {"parent_id": ws.project_id, "events": [{"name": "Weekly", "type": "recurring", **fields}]}


def the_event(settings: Settings) -> Any:
    with VideoClient.from_settings(settings) as client:
        (event,) = client.live_events.iter_events()
        return event


def test_enabled_by_setup_then_broadcast_next_stream_completed(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data = weekly(ws, state="draft")
    file = write(tmp_path / "w.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    assert run_up(opts, settings).exit_code == 0
    event = the_event(settings)
    with pytest.raises(httpx.HTTPStatusError) as refused:  # the ingest takes enabled events only
        emu_control.broadcast(ws, event.id, seconds=1, qos=False)
    assert refused.value.response.json()["error"]["invalid_params"][0]["reason"] == "not enabled"
    assert run_plan(opts, settings, drift=True).exit_code == 0

    data["events"][0]["state"] = "enabled"
    write(tmp_path / "w.yaml", data)
    shown = "\n".join(run_plan(opts, settings).lines)
    assert "update    state    Weekly" in shown and "state: draft -> enabled" in shown
    assert run_plan(opts, settings, drift=True).exit_code == 1
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    assert [(r["method"], r["path"].split("/")[-1]) for r in writes(emu_control, ws, mark)] == [
        ("PUT", "enable")
    ]
    assert run_plan(opts, settings, drift=True).exit_code == 0
    ran = emu_control.broadcast(ws, event.id, seconds=1, qos=False)
    assert ran["stream_id"] == event.stream.id

    # the next stream of the recurring event: scheduled once (POST), then unchanged
    data["events"][0]["next_stream"] = NEXT
    write(tmp_path / "w.yaml", data)
    shown = "\n".join(run_plan(opts, settings).lines)
    assert "create    stream   Weekly" in shown and f"next_stream: - -> {NEXT}" in shown
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    assert [(r["method"], r["path"].split("/")[-1]) for r in writes(emu_control, ws, mark)] == [
        ("POST", "stream")
    ]
    stream = the_event(settings).stream
    assert stream.is_pending and stream.id != ran["stream_id"]
    assert stream.started_at.isoformat().replace("+00:00", "Z") == NEXT
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0 and writes(emu_control, ws, mark) == []
    # a later one while that one is still pending: it waits (a stream queued behind a pending one cannot be
    # seen, so a lost answer could not be told from none), no drift; scheduled once that one has run
    data["events"][0]["next_stream"] = LATER
    write(tmp_path / "w.yaml", data)
    waiting = run_plan(opts, settings, drift=True)
    assert waiting.exit_code == 0 and any("waits: the event's pending stream" in s for s in waiting.lines)
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0 and writes(emu_control, ws, mark) == []
    assert emu_control.broadcast(ws, event.id, seconds=1, qos=False)["stream_id"] == stream.id
    assert run_plan(opts, settings, drift=True).exit_code == 1
    assert run_up(opts, settings).exit_code == 0
    later = the_event(settings).stream
    assert later.is_pending and later.started_at.isoformat().replace("+00:00", "Z") == LATER
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0 and writes(emu_control, ws, mark) == []

    # completed: the ingest stops; enabled again is blocked, never sent
    data["events"][0]["state"] = "completed"
    write(tmp_path / "w.yaml", data)
    assert run_up(opts, settings).exit_code == 0
    with pytest.raises(httpx.HTTPStatusError):
        emu_control.broadcast(ws, event.id, seconds=1, qos=False)
    data["events"][0]["state"] = "enabled"
    write(tmp_path / "w.yaml", data)
    mark = now(emu_control, ws)
    up = run_up(opts, settings)
    assert up.exit_code == 1 and any("completed event takes no streams" in line for line in up.lines)
    assert writes(emu_control, ws, mark) == []
    assert run_plan(opts, settings, drift=True).exit_code == 1
    with Ledger.open(opts.ledger, create=False) as book:
        kinds = Counter(op.kind for op in book.ops(status="done"))
    assert kinds["enable_event"] == 1 and kinds["complete_event"] == 1 and kinds["create_stream"] == 2


def test_a_new_event_made_enabled_its_next_stream_after_its_first(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    file = write(
        tmp_path / "w.yaml",
        weekly(ws, state="enabled", stream_start=NEXT, next_stream=LATER, chat_active=True),
    )
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    assert run_up(opts, settings).exit_code == 0
    sent = [(r["method"], r["path"].split("/")[-1]) for r in writes(emu_control, ws, 0)]
    assert sent[-1] == ("PUT", "enable")  # the state last, once everything else of the event is written
    assert ("POST", "stream") not in sent and Counter(sent)[("PUT", "stream")] == 1  # its own stream first
    event = the_event(settings)
    first = emu_control.broadcast(ws, event.id, seconds=1, qos=False)
    assert first["stream_id"] == event.stream.id
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    assert [(r["method"], r["path"].split("/")[-1]) for r in writes(emu_control, ws, mark)] == [
        ("POST", "stream")
    ]
    assert the_event(settings).stream.started_at.isoformat().replace("+00:00", "Z") == LATER
    planned = run_plan(opts, settings, drift=True)  # stream_start's stream ran: next_stream's is upcoming
    assert planned.exit_code == 0 and any(
        "stream_start's stream has run: next_stream's" in s for s in planned.lines
    )


def test_a_lost_answer_of_the_next_stream_is_found_not_sent_again(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data = weekly(ws, state="enabled")
    file = write(tmp_path / "w.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    assert run_up(opts, settings).exit_code == 0
    event = the_event(settings)
    emu_control.broadcast(ws, event.id, seconds=1, qos=False)  # nothing pending now
    data["events"][0]["next_stream"] = NEXT
    write(tmp_path / "w.yaml", data)
    emu_control.set_faults(
        ws, [{"kind": "drop_after_commit", "method": "POST", "path": "/stream$", "times": 1}]
    )
    assert run_up(opts, settings).exit_code == 0
    emu_control.clear_faults(ws)
    posts = [r for r in emu_control.requests(ws.workspace_id) if r["method"] == "POST"]
    assert [r["dropped"] for r in posts if r["path"].endswith("/stream")] == [True]
    with Ledger.open(opts.ledger, create=False) as book:
        (op,) = book.ops(kind="create_stream")
        assert op.status == "done" and book.pending_ops() == []
    assert run_plan(opts, settings, drift=True).exit_code == 0


def test_the_file_refuses_a_next_stream_of_a_one_time_event_and_an_unknown_state(
    tmp_path: Path, ws: Workspace, settings: Settings
) -> None:
    data = weekly(ws, state="live", next_stream=NEXT)
    data["events"][0]["type"] = "one-time"
    file = write(tmp_path / "w.yaml", data)
    planned = run_plan(SetupOptions(file=file, ledger=str(tmp_path / "l.db")), settings)
    assert planned.exit_code == 2
    text = "\n".join(planned.lines)
    assert "w.yaml:" in text and "state: one of draft, enabled, completed" in text
    assert "next_stream: only a recurring event" in text
