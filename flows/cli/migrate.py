"""`videoferry migrate`: the command line of the migrate job (its options: flows/migrate/options.py)."""

from __future__ import annotations

from typing import Any

import typer

from flows.cli.app import (
    add_command,
    exit_on_errors,
    job_command,
    quiet,
    run_command,
    say,
    service_settings,
)
from flows.migrate.options import MigrateOptions
from flows.options import ServiceOptions
from videoferry import jobs


def _migrate(opts: MigrateOptions, service: ServiceOptions, prefect: bool) -> None:
    """Migrate every item of an inventory into the service (safe to rerun: done items are skipped).

    Exit status 0 when every item is done, 1 when some item is not (the lines say which, by source), 2 for
    configuration to fix first, 130 when interrupted (rerun to resume).
    """
    if opts.dry_run:
        outcome = run_command(jobs.migrate, opts, service, prefect=prefect)
    else:
        from rich.console import Console

        from flows.job import ledger_path
        from flows.progress import LiveDisplay
        from tasks.service import run_limiter

        with exit_on_errors():
            settings = service_settings(service)  # the addresses answer, or exit status 2 naming them
            ledger = str(ledger_path(opts.ledger))  # a remote ledger's local copy, while the run holds it
            counter = run_limiter(settings, opts.ledger)
            if prefect:
                _check_token(settings, counter)
        with LiveDisplay(ledger, Console(stderr=True), counter, enabled=not quiet()):
            # Through the flow the URLs are parameters; the token stays in this process's environment.
            outcome = run_command(jobs.migrate, opts, service, prefect=prefect)
    _print_outcome(outcome)
    raise typer.Exit(outcome.exit_code)


def _check_token(settings: Any, limiter: Any) -> None:
    """Check the token (one list call) while Prefect's temporary server starts in its own process.

    A bad token fails here, before the server is even up; a pass stands for the run's own preflight.
    """
    from connectors.client import VideoClient
    from connectors.errors import AuthError, ServiceSilentError, VideoApiError
    from tasks.preflight import check_service
    from tasks.stop import ServiceUnavailable, outage_seconds

    client = VideoClient.from_settings(settings, limiter=limiter, outage=outage_seconds())
    try:
        check_service(client, settings)  # AuthError: the command's exit status 2
    except VideoApiError as exc:
        if isinstance(exc, AuthError):
            raise
        if isinstance(exc, ServiceSilentError):  # silent for the whole bound already: exit status 1
            raise ServiceUnavailable(exc.message) from None
        # any other failure: the run's own preflight tries again and says what it found
    finally:
        client.close()


def _print_outcome(outcome: Any) -> None:
    from flows.ledger_report import summary_lines

    if outcome.summary:
        for line in summary_lines(outcome.summary):
            say(line)
    for line in outcome.log_lines():
        if outcome.exit_code or not quiet():
            typer.echo(line)
    if outcome.report_files:
        say("report: " + ", ".join(outcome.report_files))
    if outcome.exit_code == 0:
        say("dry run: the real run can start" if outcome.preview is not None else "ok: every item is done")
    else:
        typer.echo(f"exit status {outcome.exit_code}")


def register(app: typer.Typer) -> None:
    """Add `migrate` to the app."""
    add_command(app, "migrate", job_command(MigrateOptions, _migrate, flow=True))
