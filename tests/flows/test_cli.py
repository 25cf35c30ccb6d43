"""The command line: migrate, status and report, as a user runs them; migrate offers every declared option."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

from typer.core import TyperGroup

from emulator.control import EmulatorControl, Workspace
from flows.options import MIB, MigrateOptions, ServiceOptions, entry_fields
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


def test_the_command_line_offers_every_declared_option() -> None:
    from typer.main import get_command

    from flows.cli import app

    group = get_command(app)
    assert isinstance(group, TyperGroup)
    command = group.commands["migrate"]
    params = {p.name: p for p in command.params}
    names = []
    for spec in entry_fields():
        cli = spec.metadata["cli"]
        names.append(cli.name or spec.name)
        param = params[cli.name or spec.name]
        assert getattr(param, "help", None) == spec.metadata["help"], spec.name
        if spec.default is dataclasses.MISSING:
            assert param.required, spec.name
        else:
            assert param.default == (spec.default // cli.unit if cli.unit != 1 else spec.default), spec.name
        if cli.envvar:
            assert param.envvar == cli.envvar, spec.name
    assert sorted(params) == sorted([*names, "prefect"])  # nothing the declaration does not know of
    assert params["report_dir"].opts == ["--report"] and params["dry_run"].opts == ["--dry-run"]


def test_command_line_values_become_the_options() -> None:
    from flows.cli.migrate import _options_from_cli

    values = {(f.metadata["cli"].name or f.name): f.default for f in entry_fields()}
    values.update(inventory="inv.csv", chunk_mib=2, wait_timeout=0.0, transfers=9)
    opts, service = _options_from_cli(values)
    assert opts == MigrateOptions(inventory="inv.csv", chunk_size=2 * MIB, wait_timeout=None, transfers=9)
    assert service == ServiceOptions()
