"""`videoferry apply`: the command line of the apply job."""

from __future__ import annotations

import typer

from flows.cli.app import exit_on_errors, run_command, service_settings
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
    from flows.apply import APPLY
    from flows.apply.runner import ApplyOptions, preview_apply

    options = ApplyOptions(
        ops=ops,
        ledger=ledger,
        transfers=transfers,
        allow_delete=allow_delete,
        report_dir=report,
        poll_interval=poll_interval,
        wait_timeout=wait_timeout,
    )
    with exit_on_errors():
        settings = service_settings()
        if dry_run:
            plan = preview_apply(options, settings)
            for line in plan.lines(allow_delete=allow_delete):
                typer.echo(line)
            raise typer.Exit(plan.exit_code)
        outcome = run_command(APPLY, options, settings, prefect=not no_prefect)
    for line in outcome.log_lines():
        typer.echo(line)
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
    typer.echo(f"operations: {sum(outcome.counts.values())} ({counts}), {len(outcome.refused)} rows refused")
    for path in outcome.report_files:
        typer.echo(f"wrote {path}")
    raise typer.Exit(outcome.exit_code)


def register(app: typer.Typer) -> None:
    """Add `apply` to the app."""
    app.command()(apply)
