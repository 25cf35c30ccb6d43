"""setup's privacy_share beside unique codes: the wanted privacy holds whether the first batch resets it.

Spec 3.2 resets privacy_share on an event create or update sending unique_codes_enabled true and is silent
on the first batch (which turns the flag on); the emulator's default keeps it, variant codes-reset-share
resets it. Setup's chaos test draws it on odd seeds (tests/chaos/harness.py SETUP_ONLY); the other chaos
tests make no code batches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.flows import test_setup
from tests.flows.test_setup import now, write, writes
from videoferry.connectors.client import VideoClient
from videoferry.connectors.config import Settings
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.setup.options import SetupOptions
from videoferry.flows.setup.runner import run_plan, run_up

#: The workspace (limits raised) and its settings: test_setup's fixtures.
ws, settings = test_setup.ws, test_setup.settings

PASSWORD = "share-pass-31"
READINGS = [pytest.param((), id="plain"), pytest.param(("codes-reset-share",), id="codes-reset-share")]


@pytest.fixture(autouse=True)
def share_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHARE_PW", PASSWORD)


def room(name: str, batches: list[dict[str, Any]] | None) -> dict[str, Any]:
    event: dict[str, Any] = {"name": name, "type": "one-time", "privacy_share": {"password": "${SHARE_PW}"}}
    if batches is not None:
        event["unique_codes"] = batches
    return event


def shares(settings: Settings) -> dict[str, str | None]:
    with VideoClient.from_settings(settings) as client:
        return {
            e.name or "": e.privacy_share.password if e.privacy_share else None
            for e in client.live_events.iter_events()
        }


@pytest.mark.parametrize("variants", READINGS)
def test_privacy_share_holds_under_either_reading(
    tmp_path: Path,
    ws: Workspace,
    settings: Settings,
    emu_control: EmulatorControl,
    variants: tuple[str, ...],
) -> None:
    emu_control.set_variants(ws, variants)
    batch = {"name": "attendees", "codes_amount": 2}
    data: dict[str, Any] = {"parent_id": ws.project_id, "events": [room("New", [batch]), room("Later", None)]}
    file = write(tmp_path / "s.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    shown = "\n".join(run_plan(opts, settings).lines)
    assert "update    share    New" in shown and "written after the first codes batch" in shown
    assert PASSWORD not in shown
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    sent = [(r["method"], r["path"].split("/")[-1]) for r in writes(emu_control, ws, mark)]
    share_after_batch = [("POST", "events"), ("POST", "unique-codes"), ("PUT", sent[2][1])]
    assert sent[:3] == share_after_batch
    assert shares(settings) == {"New": PASSWORD, "Later": PASSWORD}
    assert run_plan(opts, settings, drift=True).exit_code == 0

    # an existing event's first batch: the share is written after it as well, and only then
    data["events"][1] = room("Later", [batch])
    write(tmp_path / "s.yaml", data)
    assert run_up(opts, settings).exit_code == 0
    assert shares(settings) == {"New": PASSWORD, "Later": PASSWORD}
    mark = now(emu_control, ws)
    planned = run_plan(opts, settings, drift=True)
    assert planned.exit_code == 0, planned.lines
    assert run_up(opts, settings).exit_code == 0 and writes(emu_control, ws, mark) == []


def test_a_reset_by_the_service_is_named_as_such_not_as_an_edit(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(ws, ["codes-reset-share"])
    data = {"parent_id": ws.project_id, "events": [room("Hall", None)]}
    file = write(tmp_path / "s.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    assert run_up(opts, settings).exit_code == 0
    with VideoClient.from_settings(settings) as client:  # a batch made by hand resets the share
        (event,) = client.live_events.iter_events()
        client.unique_codes.create(event.id, "by-hand", 1)
    assert shares(settings) == {"Hall": None}
    drift = run_plan(opts, settings, drift=True)
    text = "\n".join(drift.lines)
    assert drift.exit_code == 1 and "reset by the service with the event's unique codes" in text
    assert run_up(opts, settings).exit_code == 0
    assert shares(settings) == {"Hall": PASSWORD}
    assert run_plan(opts, settings, drift=True).exit_code == 0
