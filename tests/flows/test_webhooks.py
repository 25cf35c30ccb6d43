"""Readiness by media.update.status webhooks: the emulator posts them, the run's receiver records them."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from emulator.control import EmulatorControl, Workspace
from flows.migrate.runner import run_migration
from tests.flows.helpers import api_calls, clip_rows, options, settings_for, write_inventory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_webhooks_carry_readiness(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = _free_port()
    monkeypatch.setenv("VIDEOFERRY_WEBHOOK_USERNAME", "hook")
    monkeypatch.setenv("VIDEOFERRY_WEBHOOK_PASSWORD", "hook-secret")
    emu_control.set_webhook(emu, f"http://127.0.0.1:{port}/", username="hook", password="hook-secret")
    emu_control.set_processing(emu, "timed", 1.0)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 5, metadata=False))
    mark = time.time()
    outcome = run_migration(
        options(inventory, emu, tmp_path, webhook_listen=f"127.0.0.1:{port}", poll_interval=5.0),
        settings_for(emu),
    )
    assert outcome.exit_code == 0, outcome.reasons
    calls = api_calls(emu_control, emu, since=mark)
    # One preflight list, five inits and at most one safety-net listing: the statuses came by webhook.
    lists = [c for c in calls if c["method"] == "GET" and c["path"] == "/v1/videos"]
    assert len(lists) <= 2
    assert len([c for c in calls if c["path"] == "/v2/init"]) == 5
