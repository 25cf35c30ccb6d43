"""`videoferry migrate`: the command line of the migrate job."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import typer

from flows.cli.app import cli_parameter, fail
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
    if opts.via not in VIAS:
        raise fail(f"--via must be one of {', '.join(VIAS)}, not {opts.via!r}")
    if opts.shard:
        from core.item import parse_shard

        try:
            parse_shard(opts.shard)
        except ValueError as exc:
            raise fail(f"--shard: {exc}") from None
    warmup = None
    if prefect and not opts.dry_run:
        from flows.warmup import ServerWarmup

        warmup = ServerWarmup().start()  # first: the server process starts while this one imports
    from rich.console import Console

    from connectors.config import ConfigError, Settings
    from connectors.inventory import InventoryError
    from flows.migrate.runner import preview_migration, run_migration
    from flows.progress import LiveDisplay
    from state.errors import LedgerError

    console = Console(stderr=True)
    ledger = opts.ledger
    try:
        if opts.dry_run:
            result = preview_migration(opts).as_dict()
        else:
            settings = Settings.from_env(api_url=service.api_url, upload_url=service.upload_url)
            from tasks.service import run_limiter

            counter = run_limiter(settings, ledger)
            if warmup is not None:
                _check_token(settings, counter)
            with LiveDisplay(ledger, console, counter):
                if warmup is not None:
                    from flows.migrate.flow import run_flow

                    warmup.join()
                    # The URLs travel as flow parameters; the token stays in this process's environment.
                    result = run_flow(opts, api_url=settings.api_url, upload_url=settings.upload_url)
                else:
                    result = run_migration(opts, settings).as_dict()
    except (ConfigError, InventoryError, LedgerError) as exc:
        raise fail(str(exc)) from None
    _print_outcome(result)
    raise typer.Exit(int(result["exit_code"]))


def _check_token(settings: Any, limiter: Any) -> None:
    """Check the token (one list call) while Prefect's temporary server starts in its own process.

    A bad token fails here, before the server is even up; a pass stands for the run's own preflight.
    """
    from connectors.client import VideoClient
    from connectors.errors import AuthError, VideoApiError
    from tasks.preflight import check_service

    client = VideoClient.from_settings(settings, limiter=limiter)
    try:
        check_service(client, settings)
    except AuthError as exc:
        raise fail(str(exc)) from None
    except VideoApiError:
        pass  # the run's own preflight tries again and says what it found
    finally:
        client.close()


migrate.__signature__ = _migrate_signature()  # type: ignore[attr-defined]


def _print_outcome(result: dict[str, Any]) -> None:
    from flows.ledger_report import summary_lines

    if result.get("summary"):
        for line in summary_lines(result["summary"]):
            typer.echo(line)
    for line in result.get("reasons", []):
        typer.echo(line)
    if result.get("report_files"):
        typer.echo("report: " + ", ".join(result["report_files"]))
    typer.echo("ok: every item is done" if result["exit_code"] == 0 else f"exit status {result['exit_code']}")



def register(app: typer.Typer) -> None:
    """Add `migrate` to the app."""
    app.command()(migrate)
