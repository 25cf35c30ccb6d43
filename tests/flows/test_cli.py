"""The command line: migrate, status and report, as a user runs them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from emulator.control import EmulatorControl, Workspace
from tests.flows.helpers import cli_env, clip_rows, run_cli, write_inventory


def _run(
    args: list[str], ws: Workspace | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cli_env(ws), cwd, timeout=240)


def test_migrate_status_report(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3))
    ledger = str(tmp_path / "l.db")
    done = _run(
        [
            "migrate",
            str(inventory),
            "--no-prefect",
            "--parent-id",
            emu.project_id,
            "--ledger",
            ledger,
            "--report",
            str(tmp_path / "rep"),
        ],
        emu,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok: every item is done" in done.stdout
    assert {p.name for p in (tmp_path / "rep").iterdir()} >= {
        "items.csv",
        "items.parquet",
        "report.json",
        "report.html",
    }

    status = _run(["status", "--ledger", ledger, "--json"])
    assert status.returncode == 0
    assert json.loads(status.stdout)["counts"]["finished"] == 3

    report = _run(["report", "--ledger", ledger, "-f", "csv", "-f", "html", "--out", str(tmp_path / "r2")])
    assert report.returncode == 0, report.stderr
    assert sorted(p.name for p in (tmp_path / "r2").iterdir()) == ["items.csv", "report.html", "summary.csv"]
    for text in (done.stdout, done.stderr, status.stdout, report.stdout):
        assert emu.token not in text


def test_missing_configuration_says_what_to_set(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", [{"source": "x.mp4"}])
    result = _run(["migrate", str(inventory), "--no-prefect", "--ledger", str(tmp_path / "l.db")])
    assert result.returncode == 2
    assert "VIDEOFERRY_" in result.stderr


def test_status_of_a_missing_ledger(tmp_path: Path) -> None:
    result = _run(["status", "--ledger", str(tmp_path / "nope.db")])
    assert result.returncode == 2
    assert "nope.db" in result.stderr
