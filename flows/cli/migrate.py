"""`videoferry migrate`: the command line of the migrate job."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import typer

from flows.cli.app import cli_parameter, exit_on_errors, service_settings
from flows.options import (
    ENTRY_DECLARATIONS,
    VIAS,
    Cli,
    MigrateOptions,
    ServiceOptions,
    entry_fields,
    from_params,
)


def _migrate_signature() -> inspect.Signature:
    """`migrate`'s parameters: the entry options of flows/options.py, --prefect/--no-prefect before URLs."""
    hints = {name: hint for d in ENTRY_DECLARATIONS for name, hint in typing.get_type_hints(d).items()}
    declared = [cli_parameter(f, hints[f.name]) for f in entry_fields()]
    prefect = inspect.Parameter(
        "prefect",
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(True, "--prefect/--no-prefect", help="Run as a Prefect flow (default)."),
        annotation=bool,
    )
    services = len(entry_fields(ServiceOptions))
    return inspect.Signature([*declared[:-services], prefect, *declared[-services:]], return_annotation=None)


def _options_from_cli(values: dict[str, Any]) -> tuple[MigrateOptions, ServiceOptions]:
    """The declared options from the command line's values (units converted, 0 as no bound)."""
    params = {}
    for spec in entry_fields():
        cli: Cli = spec.metadata["cli"]
        value = values[cli.name or spec.name]
        params[spec.name] = value * cli.unit if cli.unit != 1 and value is not None else value
    return from_params(params)


def migrate(**values: Any) -> None:
    """Migrate every item of an inventory into the service (safe to rerun: done items are skipped)."""
    prefect: bool = values.pop("prefect")
    opts, service = _options_from_cli(values)
    with exit_on_errors():
        _check(opts)
        warmup = None
        if prefect and not opts.dry_run:
            from flows.warmup import ServerWarmup

            warmup = ServerWarmup().start()  # first: the server process starts while this one imports
        from rich.console import Console

        from flows.job import ledger_path
        from flows.migrate.runner import preview_migration, run_migration
        from flows.progress import LiveDisplay
        from tasks.service import run_limiter

        if opts.dry_run:
            outcome = preview_migration(opts)
        else:
            settings = service_settings(service.api_url, service.upload_url)
            ledger = str(ledger_path(opts.ledger))
            counter = run_limiter(settings, ledger)
            if warmup is not None:
                _check_token(settings, counter)
            with LiveDisplay(ledger, Console(stderr=True), counter):
                if warmup is not None:
                    from flows.migrate.flow import run_flow

                    warmup.join()
                    # The URLs travel as flow parameters; the token stays in this process's environment.
                    outcome = run_flow(opts, api_url=settings.api_url, upload_url=settings.upload_url)
                else:
                    outcome = run_migration(opts, settings)
    _print_outcome(outcome)
    raise typer.Exit(outcome.exit_code)


def _check(opts: MigrateOptions) -> None:
    """Options that cannot work: ConfigError (exit status 2)."""
    from connectors.config import ConfigError

    if opts.via not in VIAS:
        raise ConfigError(f"--via must be one of {', '.join(VIAS)}, not {opts.via!r}")
    if opts.shard:
        from core.item import parse_shard

        try:
            parse_shard(opts.shard)
        except ValueError as exc:
            raise ConfigError(f"--shard: {exc}") from None


def _check_token(settings: Any, limiter: Any) -> None:
    """Check the token (one list call) while Prefect's temporary server starts in its own process.

    A bad token fails here, before the server is even up; a pass stands for the run's own preflight.
    """
    from connectors.client import VideoClient
    from connectors.errors import AuthError, VideoApiError
    from tasks.preflight import check_service

    client = VideoClient.from_settings(settings, limiter=limiter)
    try:
        check_service(client, settings)  # AuthError: the command's exit status 2
    except VideoApiError as exc:
        if isinstance(exc, AuthError):
            raise
        # any other failure: the run's own preflight tries again and says what it found
    finally:
        client.close()


migrate.__signature__ = _migrate_signature()  # type: ignore[attr-defined]


def _print_outcome(outcome: Any) -> None:
    from flows.ledger_report import summary_lines

    if outcome.summary:
        for line in summary_lines(outcome.summary):
            typer.echo(line)
    for line in outcome.log_lines():
        typer.echo(line)
    if outcome.report_files:
        typer.echo("report: " + ", ".join(outcome.report_files))
    typer.echo("ok: every item is done" if outcome.exit_code == 0 else f"exit status {outcome.exit_code}")


def register(app: typer.Typer) -> None:
    """Add `migrate` to the app."""
    app.command()(migrate)
