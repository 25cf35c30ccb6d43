"""`videoferry apply`: the command line of the apply job."""

from __future__ import annotations

import dataclasses
from typing import Any

import typer

from flows.cli.app import fail
from flows.options import DEFAULT_LEDGER


def apply(
    ops: str = typer.Argument(..., help="The operations file: a path or s3:// (connectors/OPERATIONS.md)."),
    ledger: str = typer.Option(
        DEFAULT_LEDGER,
        envvar="VIDEOFERRY_LEDGER",
        help="The ledger: key: targets are read from it, and the operations are recorded in it.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print what each row would do to which video; no write call, no ledger write.",
    ),
    allow_delete: bool = typer.Option(False, "--allow-delete", help="Let delete rows run."),
    transfers: int = typer.Option(4, min=1, max=32, help="Operations run at once."),
    report: str | None = typer.Option(
        None, help="Write the report (CSV, Parquet, JSON, HTML) into this dir."
    ),
    poll_interval: float = typer.Option(
        5.0, min=0.1, help="Seconds between two status reads of one processing video (the spec: at least 5)."
    ),
    wait_timeout: float = typer.Option(3600.0, min=1.0, help="Stop waiting for processing after this long."),
    no_prefect: bool = typer.Option(
        False, "--no-prefect", help="Run without the Prefect engine (the same runner, plain threads)."
    ),
) -> None:
    """Apply an operations file to the library: each operation exactly once, in dependency order."""
    from pathlib import Path

    from connectors.config import ConfigError, Settings
    from connectors.errors import AuthError
    from connectors.operations import OperationsError, read_operations
    from connectors.s3 import S3Config
    from flows.apply.runner import ApplyOptions
    from state.errors import LedgerBusyError, LedgerError
    from state.ledger import Ledger

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if not dry_run:
        options = ApplyOptions(
            ops=ops,
            ledger=ledger,
            transfers=transfers,
            allow_delete=allow_delete,
            report_dir=report,
            poll_interval=poll_interval,
            wait_timeout=wait_timeout,
        )
        try:
            outcome = _run_apply(options, settings, prefect=not no_prefect)
        except (OperationsError, LedgerBusyError, LedgerError) as exc:
            raise fail(str(exc)) from None
        for line in [*outcome.refused, *outcome.reasons]:
            typer.echo(line)
        counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
        typer.echo(
            f"operations: {sum(outcome.counts.values())} ({counts}), {len(outcome.refused)} rows refused"
        )
        for path in outcome.report_files:
            typer.echo(f"wrote {path}")
        raise typer.Exit(outcome.exit_code)
    from connectors.client import VideoClient
    from tasks.apply.plan import resolve_plan

    try:
        operations = read_operations(ops, s3=S3Config.from_env())
        book = Ledger.open(ledger, create=False) if Path(ledger).expanduser().exists() else None
    except (OperationsError, LedgerError) as exc:
        raise fail(str(exc)) from None
    try:
        with VideoClient.from_settings(settings) as client:
            plan = resolve_plan(operations, book, client)
    except AuthError as exc:
        raise fail(f"the service refused the token (VIDEOFERRY_TOKEN): {exc}") from None
    finally:
        if book is not None:
            book.close()
    for line in plan.lines(allow_delete=allow_delete):
        typer.echo(line)
    raise typer.Exit(plan.exit_code)


def _run_apply(options: Any, settings: Any, *, prefect: bool) -> Any:
    """The apply run: through the Prefect flow (default) or the plain runner."""
    if prefect:
        from flows.apply.flow import apply_flow
        from flows.apply.runner import ApplyOutcome

        state = apply_flow(
            **dataclasses.asdict(options),
            api_url=settings.api_url,
            upload_url=settings.upload_url,
            return_state=True,
        )
        result = state.result(raise_on_failure=False)  # a Failed run (exit status 1/2) still carries it
        if isinstance(result, BaseException):
            raise result
        assert isinstance(result, dict)
        return ApplyOutcome(**result)
    from flows.apply.runner import run_apply

    return run_apply(options, settings)



def register(app: typer.Typer) -> None:
    """Add `apply` to the app."""
    app.command()(apply)
