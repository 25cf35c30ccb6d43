"""kill -9 of the runner mid-run, then a rerun: every item done exactly once."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from tests.flows.helpers import cli_argv, cli_env, clip_rows, migrate_args, run_cli, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger


def _counts(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    try:
        ledger = Ledger.open(path, create=False)
    except Exception:
        return {}
    try:
        return ledger.counts()
    finally:
        ledger.close()


def test_kill_9_mid_run_then_rerun_finishes_each_item_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 8)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    ledger = tmp_path / "ledger.db"
    args = migrate_args(emu, inventory, ledger, transfers=3, wait_timeout=120)
    # Slow uploads down so the kill lands while items are in flight.
    emu_control.set_faults(emu, [{"kind": "bandwidth", "bytes_per_second": 40_000}], seed=1)
    proc = subprocess.Popen(
        cli_argv(*args),
        env=cli_env(emu),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    in_flight: dict[str, int] = {}
    while time.monotonic() < deadline:
        in_flight = _counts(ledger)
        if in_flight.get("uploading", 0) + in_flight.get("creating", 0) >= 1 and proc.poll() is None:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    killed_at = _counts(ledger)
    assert killed_at.get("finished", 0) < len(rows)

    emu_control.clear_faults(emu)
    rerun = run_cli(args, cli_env(emu), timeout=240)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    final = _counts(ledger)
    assert final["finished"] == len(rows)
    videos = emu_control.videos(emu)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)  # exactly one each
    assert all(v["status"] == "done" for v in videos)
    assert emu.token not in rerun.stdout + rerun.stderr
