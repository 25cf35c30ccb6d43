"""`videoferry status` and `videoferry report`: read a ledger only (no API call, no Prefect)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from videoferry.flows.cli.app import add_command, comma_list, exit_on_errors, fail, say
from videoferry.flows.options import DEFAULT_LEDGER

if TYPE_CHECKING:
    from videoferry.state.reader import LedgerReader

#: The report command's formats (tasks/report_files.FORMATS; not imported here: --help stays light).
REPORT_FORMATS = ("csv", "parquet", "json", "html")
#: Where `report` writes when --report does not say.
DEFAULT_REPORT_DIR = "videoferry-report"


def _ledger_option() -> str:
    return typer.Option(  # type: ignore[no-any-return]
        DEFAULT_LEDGER,
        envvar="VIDEOFERRY_LEDGER",
        metavar="PATH|s3://BUCKET/KEY",
        help="The ledger: a file, or s3://bucket/key (read only).",
    )


def status(
    source: str | None = typer.Argument(
        None,
        metavar="[SOURCE]",
        help=(
            "Only the items of this source: vimeo:, wistia:, mux:, cloudflare:, apivideo:, bunny:LIBRARY or"
            " youtube-takeout:PATH (any of its forms)."
        ),
    ),
    ledger: str = _ledger_option(),
    as_json: bool = typer.Option(
        False, "--json", help="Print the summary, the last run and the failed items as JSON."
    ),
    failures: int = typer.Option(
        20, min=0, metavar="N", help="How many failed items (and failed operations) to list."
    ),
) -> None:
    """Show where every item and operation stands (reads the ledger only; no API call, no Prefect).

    Exit status 0 when every item and operation is done, 1 otherwise, 2 when the ledger cannot be read.
    With SOURCE, where the items migrated from that platform stand (keys vimeo:, wistia:, youtube:, mux:,
    cloudflare:, apivideo:, bunny:LIBRARY/).
    """
    from videoferry.flows.job import read_ledger
    from videoferry.flows.ledger_report import everything_done, ledger_summary, summary_lines
    from videoferry.state.errors import LedgerError
    from videoferry.tasks.apply.report import failed_lines, operations_frame
    from videoferry.tasks.migrate.report import FAILED_STATES, failed_item_line, failed_item_record

    notes: list[str] = []
    with exit_on_errors(), read_ledger(ledger, notes) as book:
        if book is None:
            raise LedgerError(f"ledger {ledger} does not exist")
        if source is not None:
            _source_status(book, source, as_json, failures)
        summary = ledger_summary(book)
        bad = book.items(FAILED_STATES, limit=failures)
        runs = book.runs()
        units = book.units()
    for note in notes:
        typer.echo(f"warning: {note}", err=True)
    code = 0 if everything_done(summary) else 1
    last = runs[-1] if runs else None
    if as_json:
        document = {
            **summary,
            "last_run": None
            if last is None
            else {
                "run_id": last.run_id,
                "command": last.command,
                "status": last.status,
                "started_at": last.started_at,
                "finished_at": last.finished_at,
            },
            "failed_items": [failed_item_record(item) for item in bad],
            "failed_operations": failed_lines(operations_frame(units), failures),
        }
        typer.echo(json.dumps(document, default=str, indent=2, ensure_ascii=False))
        raise typer.Exit(code)
    for line in summary_lines(summary):
        say(line)
    if last is not None:
        stopped = (last.summary or {}).get("stopped")  # what stopped it, when something did (flows/job.py)
        say(
            f"last run: {last.run_id} ({last.command}) {last.status}"
            + (f"; stopped: {stopped}" if stopped else "")
        )
    if bad:
        typer.echo("failed items:")
    for item in bad:
        typer.echo(f"  {failed_item_line(item)}")
    for line in failed_lines(operations_frame(units), failures):
        typer.echo(f"  {line}")
    raise typer.Exit(code)


def _source_status(book: LedgerReader, source: str, as_json: bool, failures: int) -> None:
    """`status SOURCE`: the counts by state of the source's items, and its failed items; exits."""
    from collections import Counter

    from videoferry.connectors.platforms.listing import source_key_prefix
    from videoferry.core.item import COMPLETE_STATES
    from videoferry.tasks.migrate.report import FAILED_STATES, failed_item_line, failed_item_record

    prefix = source_key_prefix(source)
    items = [item for item in book.items() if item.key.startswith(prefix)]
    counts = Counter(str(item.state) for item in items)
    bad = [item for item in items if item.state in FAILED_STATES][:failures]
    code = 0 if items and all(item.state in COMPLETE_STATES for item in items) else 1
    if as_json:
        document = {
            "source": prefix,
            "items": len(items),
            "counts": dict(counts),
            "failed_items": [failed_item_record(item) for item in bad],
        }
        typer.echo(json.dumps(document, default=str, indent=2, ensure_ascii=False))
        raise typer.Exit(code)
    shown = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "none"
    label = prefix if prefix.endswith(":") else f"{prefix.removesuffix('/')}:"  # bunny:<library>/
    say(f"{label} {len(items)} items in the ledger: {shown}")
    if bad:
        typer.echo("failed items:")
    for item in bad:
        typer.echo(f"  {failed_item_line(item)}")
    raise typer.Exit(code)


def report_cmd(
    ledger: str = _ledger_option(),
    fmt: list[str] = typer.Option(  # noqa: B008 - typer's declaration style
        list(REPORT_FORMATS),
        "--format",
        "-f",
        metavar="FORMAT,FORMAT",
        help="csv, parquet, json or html (comma-separated or repeated).",
    ),
    report_dir: str = typer.Option(
        DEFAULT_REPORT_DIR, "--report", metavar="DIR", help="Write the report files into this directory."
    ),
    out: str | None = typer.Option(None, "--out", hidden=True, help="The old name of --report."),
) -> None:
    """Write the item and operation tables and the summary of a ledger (reads the ledger only)."""
    fmt = comma_list(fmt) or list(REPORT_FORMATS)
    bad = [f for f in fmt if f not in REPORT_FORMATS]
    if bad:
        raise fail(f"unknown format {bad[0]!r} (use {', '.join(REPORT_FORMATS)})")
    from videoferry.flows.ledger_report import report_only, summary_lines

    notes: list[str] = []
    with exit_on_errors():
        report, files = report_only(ledger, out or report_dir, tuple(fmt), notes)
    for note in notes:
        typer.echo(f"warning: {note}", err=True)
    for line in summary_lines(report.summary):
        say(line)
    for path in files:
        say(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add `status` and `report` to the app."""
    add_command(app, "status", status)
    add_command(app, "report", report_cmd)
