"""The command line: migrate, status and report as a user runs them; every job offers its declared options."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.core import TyperGroup

from connectors.config import ConfigError
from emulator.control import EmulatorControl, Workspace
from flows.apply.options import ApplyOptions
from flows.archive.options import ArchiveOptions
from flows.migrate.options import MigrateOptions
from flows.options import (
    MAX_TRANSFERS,
    MIB,
    MIN_POLL_SECONDS,
    ServiceOptions,
    cli_fields,
    options_from_params,
)
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


#: Each job command, its declaration, the options it takes (None: all declared) and whether it has a flow.
COMMANDS = {
    "migrate": ("flows.migrate.options:MigrateOptions", None, True),
    "apply": ("flows.apply.options:ApplyOptions", None, True),
    "archive": ("flows.archive.options:ArchiveOptions", None, True),
    "backup": ("flows.backup.options:BackupOptions", None, True),
    "check": ("flows.check.options:CheckOptions", None, True),
    "setup plan": ("flows.setup.options:SetupOptions", "PLAN_FIELDS", True),
    "setup up": ("flows.setup.options:SetupOptions", "UP_FIELDS", True),
    "setup drift": ("flows.setup.options:SetupOptions", "DRIFT_FIELDS", True),
    "setup drm-check": ("flows.setup.options:DrmCheckOptions", None, False),
}


def _command(group: TyperGroup, name: str) -> Any:
    *parents, last = name.split()
    for parent in parents:
        group = group.commands[parent]  # type: ignore[assignment]
    return group.commands[last]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_job_command_offers_exactly_its_declared_options(name: str) -> None:
    from typer.main import get_command

    from flows.cli import app

    path, names_attr, has_flow = COMMANDS[name]
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)
    declaration = getattr(module, attribute)
    names = getattr(module, names_attr) if names_attr else None
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    params = {p.name: p for p in _command(group, name).params}
    expected = []
    for spec in [*cli_fields(declaration, names), *cli_fields(ServiceOptions)]:
        cli = spec.metadata["cli"]
        expected.append(cli.name or spec.name)
        param = params[cli.name or spec.name]
        assert getattr(param, "help", None) == spec.metadata["help"], spec.name
        if spec.default is dataclasses.MISSING:
            assert param.required, spec.name
        else:
            assert param.default == (spec.default // cli.unit if cli.unit != 1 else spec.default), spec.name
        if cli.envvar:
            assert param.envvar == cli.envvar, spec.name
    # Nothing the declaration does not know of but -v / -q; --prefect/--no-prefect wherever a flow exists,
    # unset by default for every job: a configured Prefect server decides (said in --help).
    assert sorted(params) == sorted([*expected, "verbose", "quiet", *(["prefect"] if has_flow else [])])
    if has_flow:
        assert params["prefect"].default is None
        assert "Default: through Prefect when a Prefect server is configured" in params["prefect"].help
    for shared, flag in SHARED_FLAGS.items():
        if shared in params:
            assert params[shared].opts == [flag], shared


#: The options every job that has them shows the same way: one name, one unit, one bound.
SHARED_FLAGS = {
    "ledger": "--ledger",
    "report_dir": "--report",
    "transfers": "--transfers",
    "poll_interval": "--poll-interval",
    "wait_timeout": "--wait-timeout",
    "dry_run": "--dry-run",
    "api_url": "--api-url",
    "upload_url": "--upload-url",
}


def test_the_shared_options_have_one_name_unit_and_bound() -> None:
    from typer.main import get_command

    from flows.cli import app

    group = get_command(app)
    assert isinstance(group, TyperGroup)
    seen: dict[str, set[tuple[Any, ...]]] = {}
    for name in COMMANDS:
        for param in _command(group, name).params:
            if param.name in ("transfers", "poll_interval", "wait_timeout", "ledger"):
                bounds = (getattr(param, "min", None), getattr(param, "max", None), param.envvar)
                seen.setdefault(param.name, set()).add(bounds)
    assert seen["transfers"] == {(1, MAX_TRANSFERS, None)}
    assert seen["poll_interval"] == {(MIN_POLL_SECONDS, None, None)}  # the spec: one poll per 5 s
    assert seen["wait_timeout"] == {(0.0, None, None)}  # 0: no bound
    assert seen["ledger"] == {(None, None, "VIDEOFERRY_LEDGER")}


def test_command_line_values_become_the_options() -> None:
    from flows.cli.app import options_from_cli

    values = {(f.metadata["cli"].name or f.name): f.default for f in cli_fields(MigrateOptions)}
    values.update(inventory="inv.csv", chunk_mib=2, wait_timeout=0.0, transfers=9)
    opts, service = options_from_cli(MigrateOptions, values)
    assert opts == MigrateOptions(inventory="inv.csv", chunk_size=2 * MIB, wait_timeout=None, transfers=9)
    assert service == ServiceOptions()
    archive, _ = options_from_cli(
        ArchiveOptions, {"to": "d", "events": " a, b ,", "part_mib": 6, "tags": None}
    )
    assert (archive.events, archive.tags, archive.part_size) == (["a", "b"], None, 6 * MIB)


def test_a_value_outside_its_bounds_is_a_configuration_error() -> None:
    from flows.job import exit_for

    with pytest.raises(ConfigError, match="--poll-interval must be at least 5") as caught:
        options_from_params(ApplyOptions, {"ops": "o.csv", "poll_interval": 0.5})
    assert exit_for(caught.value) is not None and exit_for(caught.value)[0] == 2  # type: ignore[index]
    with pytest.raises(ConfigError, match="--via"):
        options_from_params(MigrateOptions, {"inventory": "i.csv", "via": "carrier-pigeon"})
