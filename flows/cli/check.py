"""`videoferry check`: the command line of the check job."""

from __future__ import annotations

import typer

from flows.cli.app import exit_on_errors, run_command, service_settings
from flows.options import DEFAULT_LEDGER


def check(
    inventory: str = typer.Argument(..., help="The inventory the library was migrated from (path or s3://)."),
    ledger: str = typer.Option(
        DEFAULT_LEDGER,
        envvar="VIDEOFERRY_LEDGER",
        help="The migration's ledger: items are found by its video ids (without one, by title and size).",
    ),
    parent_id: str | None = typer.Option(None, help="Project or folder of rows without parent_id."),
    download_md5: bool = typer.Option(
        False, "--download-md5", help="Hash the original's download when the service gives no md5."
    ),
    combined: str | None = typer.Option(None, help="Also write the combined lines (=, -, +, *, !) here."),
    report: str | None = typer.Option(
        None, help="Write the report (CSV, Parquet, JSON, HTML) into this dir."
    ),
    adopt: bool = typer.Option(
        False,
        "--adopt",
        help="Record in the ledger the videos that provably are items' (title and bytes); no service write.",
    ),
) -> None:
    """Compare the library in the service with an inventory and its ledger, like `rclone check`.

    One line per item (= same, - missing in the service, * differs, with the fields named, ! not checked) and
    per video no item accounts for (+). Exit status 0 only when everything matches, 1 otherwise, 2 for
    configuration to fix. Only reads the service; --adopt writes the ledger.
    """
    from flows.check import CHECK
    from flows.check.runner import CheckOptions
    from tasks.check.report import summary_lines

    options = CheckOptions(
        inventory=inventory,
        ledger=ledger,
        parent_id=parent_id,
        download_md5=download_md5,
        combined=combined,
        report_dir=report,
        adopt=adopt,
    )
    with exit_on_errors():
        outcome = run_command(CHECK, options, service_settings(), prefect=False)
    for line in outcome.lines:
        typer.echo(line.text())
    for note in outcome.notes:
        typer.echo(note)
    for text in summary_lines(outcome.summary):
        typer.echo(text)
    for path in outcome.report_files:
        typer.echo(f"wrote {path}")
    raise typer.Exit(outcome.exit_code)


def register(app: typer.Typer) -> None:
    """Add `check` to the app."""
    app.command()(check)
