"""`videoferry setup plan|up|drift|drm-check`: the command line of the setup job (flows/setup/options.py)."""

from __future__ import annotations

from typing import Any

import typer

from flows.cli.app import add_command, job_command, new_group, run_command
from flows.options import ServiceOptions
from flows.setup.options import DRIFT_FIELDS, PLAN_FIELDS, UP_FIELDS, DrmCheckOptions, SetupOptions
from videoferry import jobs

setup = new_group(
    "setup", "Make live events, restreams, code batches, DRM and privacy domains match a desired-state file."
)


def _run(action: str, opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """The command's run (videoferry.setup: plain, or through its Prefect flow); its lines printed, errors on
    stderr."""
    outcome: Any = run_command(jobs.setup, opts, service, prefect=prefect, action=action)
    for line in outcome.lines:
        typer.echo(line, err=line.startswith("error:"))
    raise typer.Exit(outcome.exit_code)


def _plan(opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Print per object create / update (field by field) / unchanged / delete; no write call. Exit 0 / 2."""
    _run("plan", opts, service, prefect)


def _up(opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Make the service match the file, each write exactly once. Exit 0 done, 1 failed/skipped, 2 config."""
    _run("up", opts, service, prefect)


def _drift(opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Exit 1 when the service differs from the file (a nightly check), 0 when it matches, 2 config."""
    _run("drift", opts, service, prefect)


def _drm_check(opts: DrmCheckOptions, service: ServiceOptions, prefect: bool) -> None:
    """Show the license decision (spec 3.3) of the DRM callback: exit 0 issued / not blocked, 1 denied."""
    check = run_command(jobs.drm_check, opts, service)  # none configured: exit status 2, said so
    typer.echo(check.line())
    raise typer.Exit(1 if check.decision == "denied" else 0)


# Like every job with a flow: --prefect / --no-prefect, else through Prefect when a server is configured.
add_command(setup, "plan", job_command(SetupOptions, _plan, names=PLAN_FIELDS, flow=True))
add_command(setup, "up", job_command(SetupOptions, _up, names=UP_FIELDS, flow=True))
add_command(setup, "drift", job_command(SetupOptions, _drift, names=DRIFT_FIELDS, flow=True))
add_command(setup, "drm-check", job_command(DrmCheckOptions, _drm_check))


def register(app: typer.Typer) -> None:
    """Add the `setup` commands to the app."""
    app.add_typer(setup, name="setup")
