"""`videoferry status` and `videoferry report`: read a ledger only (no API call, no Prefect)."""

from __future__ import annotations

import json

import typer

from flows.cli.app import exit_on_errors, fail
from flows.options import DEFAULT_LEDGER

#: The report command's formats (tasks/report_files.FORMATS; not imported here: --help stays light).
REPORT_FORMATS = ("csv", "parquet", "json", "html")


def status(
    ledger: str = typer.Option(
        DEFAULT_LEDGER, envvar="VIDEOFERRY_LEDGER", help="The ledger: a file, or s3://bucket/key (read only)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    failures: int = typer.Option(20, help="How many failed items (and failed operations) to list."),
) -> None:
    """Show where every item and operation stands (reads the ledger only; no API call, no Prefect)."""
    from flows.job import read_ledger
    from flows.ledger_report import everything_done, ledger_summary, summary_lines
    from state.errors import LedgerError
    from tasks.apply.report import failed_lines, operations_frame

    notes: list[str] = []
    with exit_on_errors(), read_ledger(ledger, notes) as book:
        if book is None:
            raise LedgerError(f"ledger {ledger} does not exist")
        summary = ledger_summary(book)
        bad = book.items(["failed", "error", "aborted"], limit=failures)
        runs = book.runs()
        units = book.units()
    for note in notes:
        typer.echo(f"warning: {note}", err=True)
    if as_json:
        typer.echo(json.dumps(summary, default=str, indent=2))
        return
    for line in summary_lines(summary):
        typer.echo(line)
    if runs:
        last = runs[-1]
        typer.echo(f"last run: {last.run_id} {last.status}")
    for item in bad:
        where = f"row {item.spec.row}"
        typer.echo(f"  {item.key} ({where}): {item.state} {item.error_code}: {item.error_message}")
    for line in failed_lines(operations_frame(units), failures):
        typer.echo(f"  {line}")
    raise typer.Exit(0 if everything_done(summary) else 1)


def report_cmd(
    ledger: str = typer.Option(
        DEFAULT_LEDGER, envvar="VIDEOFERRY_LEDGER", help="The ledger: a file, or s3://bucket/key (read only)."
    ),
    fmt: list[str] = typer.Option(  # noqa: B008 - typer's declaration style
        list(REPORT_FORMATS), "--format", "-f", help="csv, parquet, json or html (repeatable)."
    ),
    out: str = typer.Option("videoferry-report", help="Directory for the report files."),
) -> None:
    """Write the item and operation tables and the summary of a ledger (reads the ledger only)."""
    bad = [f for f in fmt if f not in REPORT_FORMATS]
    if bad:
        raise fail(f"unknown format {bad[0]!r} (use {', '.join(REPORT_FORMATS)})")
    from flows.ledger_report import report_only, summary_lines

    notes: list[str] = []
    with exit_on_errors():
        report, files = report_only(ledger, out, tuple(fmt), notes)
    for note in notes:
        typer.echo(f"warning: {note}", err=True)
    for line in summary_lines(report.summary):
        typer.echo(line)
    for path in files:
        typer.echo(f"wrote {path}")



def register(app: typer.Typer) -> None:
    """Add `status` and `report` to the app."""
    app.command()(status)
    app.command("report")(report_cmd)
