"""A create whose outcome stays unknown through a failing listing is reconciled again in the same run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flows.helpers import clip_rows, creates, options, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger
from videoferry.tasks import lookup, shared_listing


def test_a_postponed_reconcile_settles_before_the_run_ends(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 1, metadata=False)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    # The init is committed but its answer lost; then every listing fails: the preflight's five attempts
    # and the reconcile's five, so the item is left in creating once. Then the service recovers.
    emu_control.set_faults(
        emu,
        [
            {"kind": "drop_after_commit", "method": "POST", "path": "^/v2/init$", "times": 1},
            {"kind": "error", "status": 503, "method": "GET", "path": "^/v1/videos$", "times": 10},
        ],
    )
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    ledger = Ledger.open(tmp_path / "ledger.db", create=False)
    try:
        (item,) = ledger.items()
        notes = [e.message or "" for e in ledger.events(item.key)]
    finally:
        ledger.close()
    assert any("reconcile postponed" in n for n in notes), notes  # it was left in creating once
    assert item.state == "finished"
    videos = emu_control.videos(emu)
    assert [(v["id"], v["title"], v["status"]) for v in videos] == [(item.video_id, rows[0]["title"], "done")]


def test_creates_are_bounded_per_item_over_the_whole_run(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every create fails with an unknown outcome (a 500 after the request was sent) and makes nothing: each is
    # reconciled ("no video" once the intent has settled), and the item is created again, in a later round of
    # the same run, until it has had max_create_attempts; then it fails with a reason (not left in creating).
    for module in (lookup, shared_listing):
        monkeypatch.setattr(module, "SETTLE_SECONDS", 1.0)  # the settle wait is not what is tested here
    rows = clip_rows(clip_factory, 1, metadata=False)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    emu_control.set_faults(emu, [{"kind": "error", "status": 500, "method": "POST", "path": "^/v2/init$"}])
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 1, outcome.reasons
    assert len(creates(emu_control, emu)) == 3
    ledger = Ledger.open(tmp_path / "ledger.db", create=False)
    try:
        (item,) = ledger.items()
        intents = [e for e in ledger.events(item.key) if (e.message or "") == "create intent"]
    finally:
        ledger.close()
    assert (item.state, item.error_code, len(intents)) == ("failed", "create_attempts", 3)
    assert emu_control.videos(emu) == []

    emu_control.set_faults(emu, [])
    rerun = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert rerun.exit_code == 0, rerun.reasons
    assert [v["title"] for v in emu_control.videos(emu)] == [rows[0]["title"]]
