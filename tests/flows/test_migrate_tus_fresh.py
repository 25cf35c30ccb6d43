"""A migration's tus uploads right after their own init ask no HEAD: 2 counted calls per small clip."""

from __future__ import annotations

from pathlib import Path

from tests.flows.helpers import api_calls, clip_rows, options, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration


def test_small_clips_cost_an_init_and_one_patch_each_under_tus_rate_limited(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    n = 4
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, n, metadata=False))
    emu_control.set_variants(emu, ["tus-rate-limited"])  # upload requests count against the rate limit
    # Limits no run of 4 clips reaches: no 429, so no wait and no HEAD after one (that would be right too).
    emu_control.set_limits(emu, rate_per_second=1000, rate_per_minute=100000)
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    assert outcome.summary["counts"]["finished"] == n
    counted = api_calls(emu_control, emu)
    uploads = [(r["method"], r["status"]) for r in counted if r["path"].startswith("/upload/")]
    inits = [r for r in counted if r["method"] == "POST" and r["path"] == "/v2/init"]
    assert uploads == [("PATCH", 204)] * n  # one chunk each, no HEAD before it
    assert len(inits) == n
    # Everything else the run counted is its fixed reads (listings, polls), not a per-upload call.
    others = [r for r in counted if not r["path"].startswith("/upload/") and r["path"] != "/v2/init"]
    assert all(r["method"] == "GET" for r in others), sorted({(r["method"], r["path"]) for r in others})
    assert len(counted) == 2 * n + len(others)
