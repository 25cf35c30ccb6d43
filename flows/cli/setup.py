"""`videoferry setup plan|up|drift|drm-check`: the command line of the setup job."""

from __future__ import annotations

from typing import Any

import typer

from flows.options import DEFAULT_LEDGER

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


def _settings() -> Any:
    from connectors.config import ConfigError, Settings

    try:
        return Settings.from_env()
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _finish(outcome: Any) -> None:
    for line in outcome.lines:
        typer.echo(line, err=line.startswith("error:"))
    raise typer.Exit(outcome.exit_code)


def _run(kind: str, opts: Any, prefect: bool) -> Any:
    from connectors.errors import AuthError, VideoApiError
    from state.errors import LedgerError

    settings = _settings()
    try:
        if prefect:
            from flows.setup.flow import run_setup_flow

            return run_setup_flow(kind, opts, api_url=settings.api_url, upload_url=settings.upload_url)
        from flows.setup.runner import run_plan, run_up

        if kind == "up":
            return run_up(opts, settings)
        return run_plan(opts, settings, drift=kind == "drift")
    except (AuthError, LedgerError) as exc:
        typer.echo(f"error: {type(exc).__name__}: {getattr(exc, 'code', '') or exc}", err=True)
        raise typer.Exit(2) from None
    except VideoApiError as exc:
        typer.echo(f"error: the service answered {type(exc).__name__} (code {exc.code})", err=True)
        raise typer.Exit(1) from None


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
    _finish(_run("plan", opts, prefect))


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

    _finish(_run("up", SetupOptions(file=file, ledger=ledger, prune=prune, outputs=outputs), prefect))


@setup.command("drift")
def drift_cmd(
    file: str = typer.Argument(..., help=FILE_HELP),
    ledger: str = _ledger(),
    prune: bool = typer.Option(False, "--prune", help="Count what the file no longer declares as drift."),
    prefect: bool = _prefect(),
) -> None:
    """Exit 1 when the service differs from the file (a nightly check), 0 when it matches, 2 config."""
    from flows.setup.runner import SetupOptions

    _finish(_run("drift", SetupOptions(file=file, ledger=ledger, prune=prune), prefect))


@setup.command("drm-check")
def drm_check_cmd(
    ledger: str = _ledger(),
    project_id: str | None = typer.Option(
        None, help="Check this project's callback (default: the workspace's)."
    ),
    video_id: str | None = typer.Option(None, help="A video to ask the service's license simulation about."),
) -> None:
    """Show the license decision (spec 3.3) of the DRM callback: exit 0 issued / not blocked, 1 denied."""
    from connectors.client import VideoClient
    from connectors.errors import VideoApiError
    from tasks.service import run_limiter
    from tasks.setup.drm import check_drm

    settings = _settings()
    with VideoClient.from_settings(settings, limiter=run_limiter(settings, ledger)) as client:
        try:
            check = check_drm(client, project_id=project_id, video_id=video_id)
        except VideoApiError as exc:
            typer.echo(f"error: the service answered {type(exc).__name__} (code {exc.code})", err=True)
            raise typer.Exit(1) from None
    if check is None:
        typer.echo("error: no DRM callback is configured", err=True)
        raise typer.Exit(2)
    typer.echo(check.line())
    raise typer.Exit(1 if check.decision == "denied" else 0)


def register(app: typer.Typer) -> None:
    """Add the `setup` commands to the app."""
    app.add_typer(setup, name="setup")
