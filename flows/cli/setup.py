"""`videoferry setup plan|up|drift|drm-check`: the command line of the setup job."""

from __future__ import annotations

from typing import Any

import typer

from flows.cli.app import exit_on_errors, run_command, service_settings
from flows.job import Job
from flows.options import DEFAULT_LEDGER
from flows.setup import SETUP_DRIFT, SETUP_PLAN, SETUP_UP

setup = typer.Typer(
    name="setup",
    help="Make live events, restreams, code batches, DRM and privacy domains match a desired-state file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

FILE_HELP = "The desired-state file (YAML; tasks/SETUP.md)."
LEDGER_HELP = "The ledger: every write of `setup up` is recorded in it (what setup created, posters set)."


def _ledger() -> Any:
    return typer.Option(DEFAULT_LEDGER, envvar="VIDEOFERRY_LEDGER", help=LEDGER_HELP)


def _finish(outcome: Any) -> None:
    for line in outcome.lines:
        typer.echo(line, err=line.startswith("error:"))
    raise typer.Exit(outcome.exit_code)


def _run(job: Job, opts: Any, prefect: bool) -> Any:
    with exit_on_errors():
        return run_command(job, opts, service_settings(), prefect=prefect)


def _prefect() -> Any:
    return typer.Option(False, "--prefect/--no-prefect", help="Run as a Prefect flow (default: plain).")


@setup.command("plan")
def plan_cmd(
    file: str = typer.Argument(..., help=FILE_HELP),
    ledger: str = _ledger(),
    prune: bool = typer.Option(False, "--prune", help="Show deletes of what the file no longer declares."),
    show_unchanged: bool = typer.Option(False, "--show-unchanged", help="List unchanged objects too."),
    prefect: bool = _prefect(),
) -> None:
    """Print per object create / update (field by field) / unchanged / delete; no write call. Exit 0 / 2."""
    from flows.setup.runner import SetupOptions

    opts = SetupOptions(file=file, ledger=ledger, prune=prune, show_unchanged=show_unchanged)
    _finish(_run(SETUP_PLAN, opts, prefect))


@setup.command("up")
def up_cmd(
    file: str = typer.Argument(..., help=FILE_HELP),
    ledger: str = _ledger(),
    prune: bool = typer.Option(False, "--prune", help="Also delete what the file no longer declares."),
    outputs: str = typer.Option(
        "setup-outputs",
        help="Directory (files 0600) or s3://bucket/prefix/ for links, stream keys and codes.",
    ),
    prefect: bool = _prefect(),
) -> None:
    """Make the service match the file, each write exactly once. Exit 0 done, 1 failed/skipped, 2 config."""
    from flows.setup.runner import SetupOptions

    _finish(_run(SETUP_UP, SetupOptions(file=file, ledger=ledger, prune=prune, outputs=outputs), prefect))


@setup.command("drift")
def drift_cmd(
    file: str = typer.Argument(..., help=FILE_HELP),
    ledger: str = _ledger(),
    prune: bool = typer.Option(False, "--prune", help="Count what the file no longer declares as drift."),
    prefect: bool = _prefect(),
) -> None:
    """Exit 1 when the service differs from the file (a nightly check), 0 when it matches, 2 config."""
    from flows.setup.runner import SetupOptions

    _finish(_run(SETUP_DRIFT, SetupOptions(file=file, ledger=ledger, prune=prune), prefect))


@setup.command("drm-check")
def drm_check_cmd(
    ledger: str = _ledger(),
    project_id: str | None = typer.Option(
        None, help="Check this project's callback (default: the workspace's)."
    ),
    video_id: str | None = typer.Option(None, help="A video to ask the service's license simulation about."),
) -> None:
    """Show the license decision (spec 3.3) of the DRM callback: exit 0 issued / not blocked, 1 denied."""
    from flows.job import ledger_path
    from tasks.service import run_client
    from tasks.setup.drm import check_drm

    with exit_on_errors(), run_client(service_settings(), str(ledger_path(ledger))) as client:
        check = check_drm(client, project_id=project_id, video_id=video_id)
    if check is None:
        typer.echo("error: no DRM callback is configured", err=True)
        raise typer.Exit(2)
    typer.echo(check.line())
    raise typer.Exit(1 if check.decision == "denied" else 0)


def register(app: typer.Typer) -> None:
    """Add the `setup` commands to the app."""
    app.add_typer(setup, name="setup")
