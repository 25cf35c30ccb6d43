"""`videoferry setup plan|up|drift|drm-check`: the command line of the setup job (flows/setup/options.py)."""

from __future__ import annotations

from typing import Any

import typer

from videoferry.flows.cli.app import (
    add_command,
    exit_on_errors,
    job_command,
    new_group,
    run_command,
    service_settings,
)
from videoferry.flows.job import Job
from videoferry.flows.options import ServiceOptions
from videoferry.flows.setup import SETUP_DRIFT, SETUP_PLAN, SETUP_UP
from videoferry.flows.setup.options import DRIFT_FIELDS, PLAN_FIELDS, UP_FIELDS, DrmCheckOptions, SetupOptions

setup = new_group(
    "setup", "Make live events, restreams, code batches, DRM and privacy domains match a desired-state file."
)


def _run(job: Job, opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """The command's run (plain, or through its Prefect flow); its lines printed, errors on stderr."""
    with exit_on_errors():
        outcome: Any = run_command(job, opts, service_settings(service), prefect=prefect)
    for line in outcome.lines:
        typer.echo(line, err=line.startswith("error:"))
    raise typer.Exit(outcome.exit_code)


def _plan(opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Print per object create / update (field by field) / unchanged / delete; no write call. Exit 0 / 2."""
    _run(SETUP_PLAN, opts, service, prefect)


def _up(opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Make the service match the file, each write exactly once. Exit 0 done, 1 failed/skipped, 2 config."""
    _run(SETUP_UP, opts, service, prefect)


def _drift(opts: SetupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Exit 1 when the service differs from the file (a nightly check), 0 when it matches, 2 config."""
    _run(SETUP_DRIFT, opts, service, prefect)


def _drm_check(opts: DrmCheckOptions, service: ServiceOptions, prefect: bool) -> None:
    """Show the license decision (spec 3.3) of the DRM callback: exit 0 issued / not blocked, 1 denied."""
    from videoferry.tasks.service import run_client
    from videoferry.tasks.setup.drm import check_drm

    with exit_on_errors(), run_client(service_settings(service), opts.ledger) as client:
        check = check_drm(client, project_id=opts.project_id, video_id=opts.video_id)
    if check is None:
        typer.echo("error: no DRM callback is configured", err=True)
        raise typer.Exit(2)
    typer.echo(check.line())
    raise typer.Exit(1 if check.decision == "denied" else 0)


# Like every job: plain by default, --prefect runs the flow (flows/setup/flow.py).
add_command(setup, "plan", job_command(SetupOptions, _plan, names=PLAN_FIELDS, flow=True))
add_command(setup, "up", job_command(SetupOptions, _up, names=UP_FIELDS, flow=True))
add_command(setup, "drift", job_command(SetupOptions, _drift, names=DRIFT_FIELDS, flow=True))
add_command(setup, "drm-check", job_command(DrmCheckOptions, _drm_check))


def register(app: typer.Typer) -> None:
    """Add the `setup` commands to the app."""
    app.add_typer(setup, name="setup")
