"""A ledger's whole report (status, report, --report): each job's section, written by tasks/report_files."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from state.reader import LedgerReader
from tasks.apply.report import (
    failed_lines,
    operations_complete,
    operations_frame,
    operations_headline,
    operations_html,
    operations_lines,
    operations_summary,
)
from tasks.archive.report import archive_frame, archive_html, archive_lines, archive_summary
from tasks.backup.report import backup_frame, backup_html, backup_lines, backup_summary
from tasks.migrate.report import (
    FAILED_STATES,
    failed_item_line,
    item_rows,
    items_frame,
    items_headline,
    items_html,
    items_lines,
    timeline,
)
from tasks.report_files import FORMATS, PAGE_STYLE, summary_frame, write_report_files

#: How many failed items the markdown summary (a Prefect artifact) names; the report's tables have them all.
ARTIFACT_FAILED = 200


@dataclass
class Report:
    """A ledger's report: the summary (with each job's part), rejected rows, and each job's tables (items and
    their completion timeline: migrate; operations: apply; archived recordings: archive; backed-up videos:
    backup; empty when none)."""

    items: pl.DataFrame
    summary: dict[str, Any]
    rejected: list[dict[str, Any]] = field(default_factory=list)
    timeline: pl.DataFrame = field(default_factory=pl.DataFrame)
    operations: pl.DataFrame = field(default_factory=pl.DataFrame)
    archive: pl.DataFrame = field(default_factory=pl.DataFrame)
    backup: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: The ledger's last run in words (its job, id, date, how it ended and its destination); "" without any.
    last_run: str = ""
    #: The failed items by their source, state and error (at most ARTIFACT_FAILED): what a person reads first.
    failed: list[str] = field(default_factory=list)
    #: The run that writes the report, when one does (--report of migrate and apply); None: `report`.
    run: RunReport | None = None


@dataclass(frozen=True)
class RunReport:
    """The run that writes a report (--report): its job and id, the status it ends with (its outcome is
    known; the ledger says `running` until the run is finished, right after), and what it did, as figures
    (report.json's `this_run`) and lines (the page's head)."""

    job: str
    run_id: str
    status: str
    figures: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


#: A report's title by the job of the run it is about (a ledger may hold items and operations both).
TITLES = {
    "migrate": "videoferry migration report",
    "apply": "videoferry operations report",
    "archive": "videoferry archive report",
    "backup": "videoferry backup report",
}


def ledger_summary(ledger: LedgerReader) -> dict[str, Any]:
    """The ledger's summary: the items', with the operations', archive's and backup's parts when there are."""
    summary = ledger.summary()
    operations = operations_summary(ledger.units())
    if operations:
        summary["operations"] = operations
    archived = archive_summary(ledger)
    if archived:
        summary["archive"] = archived
    backed_up = backup_summary(ledger)
    if backed_up:
        summary["backup"] = backed_up
    return summary


def everything_done(summary: dict[str, Any]) -> bool:
    """Whether every item, every operation and every archive and backup step of a ledger summary is done."""
    counts = summary.get("counts", {})
    complete = counts.get("done", 0) + counts.get("finished", 0)
    archive, backup = summary.get("archive"), summary.get("backup")
    return (
        complete == summary.get("items", 0)
        and operations_complete(summary)
        and not (archive and archive["failed"])
        and not (backup and backup["failed"])
    )


def build_report(
    ledger: LedgerReader,
    *,
    rejected: list[dict[str, Any]] | None = None,
    charts: bool = True,
    run: RunReport | None = None,
) -> Report:
    """Read the ledger into a Report (never the upload endpoint: report rows do not carry it). charts=False
    leaves the completion timeline empty: it reads every event of the ledger (about a second at 3000 items),
    and the Prefect artifacts do not show it. run: the run writing it (its status and what it did)."""
    rows = item_rows(ledger)
    summary = ledger_summary(ledger)
    if rejected:
        summary["rejected_rows"] = len(rejected)
    return Report(
        items=items_frame(rows),
        summary=summary,
        rejected=list(rejected or []),
        timeline=timeline(ledger, rows) if charts else pl.DataFrame(),
        operations=operations_frame(ledger.units()),
        archive=archive_frame(ledger),
        backup=backup_frame(ledger),
        last_run=last_run_line(ledger, run),
        failed=[failed_item_line(i) for i in ledger.items(FAILED_STATES, limit=ARTIFACT_FAILED)],
        run=run,
    )


#: The parameters that say where a job's writes go (migrate: the project or folder; archive: its store).
DESTINATIONS = (("parent_id", "project/folder"), ("to", "archive"))


def last_run_line(ledger: LedgerReader, writing: RunReport | None = None) -> str:
    """`last run: migrate 3f2a... started 2026-11-26 00:55 UTC, done; destination: project/folder P1`; for
    the run writing the report, `this run: ...` with the status it ends with (the ledger's is `running`)."""
    runs = ledger.runs()
    if not runs:
        return ""
    run = runs[-1]
    which, status = "last run", run.status
    if writing is not None and writing.run_id == run.run_id:
        which, status = "this run", writing.status
    line = f"{which}: {run.command} {run.run_id}, started {run.started_at:%Y-%m-%d %H:%M} UTC, {status}"
    where = [f"{label} {run.params[name]}" for name, label in DESTINATIONS if run.params.get(name)]
    stopped = (run.summary or {}).get("stopped")
    return (
        line
        + (f"; destination: {', '.join(where)}" if where else "")
        + (f"; stopped: {stopped}" if stopped else "")
    )


def _operations_only(summary: dict[str, Any]) -> bool:
    """A ledger used only by apply: units, no item (the item lines and charts would say nothing)."""
    return bool(summary.get("operations")) and not summary.get("items")


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as plain lines for the terminal and the markdown artifact (operations when there are)."""
    if _operations_only(summary):
        lines = operations_lines(summary)
        if summary.get("rejected_rows"):
            lines.append(f"refused operation rows: {summary['rejected_rows']}")
        return lines
    return (
        items_lines(summary)
        + operations_lines(summary)
        + archive_lines(summary.get("archive"))
        + backup_lines(summary.get("backup"))
    )


def markdown(report: Report) -> str:
    """A short markdown summary (Prefect artifact)."""
    out = ["# videoferry migration", ""]
    if report.last_run:
        out += [report.last_run, ""]
    if report.run is not None and report.run.lines:
        out += [*report.run.lines, ""]
    out += [f"- {line}" for line in summary_lines(report.summary)]
    if report.rejected:
        out += ["", "## Rejected rows", ""]
        out += [f"- row {r['row']}, {r['field']}: {r['reason']}" for r in report.rejected[:200]]
    if report.failed:
        out += ["", "## Failed items", ""]
        out += [f"- {line}" for line in report.failed]
    failed = failed_lines(report.operations, ARTIFACT_FAILED)
    if failed:
        out += ["", "## Failed operations", ""]
        out += [f"- {line}" for line in failed]
    return "\n".join(out)


def render_html(report: Report) -> str:
    """One self-contained HTML page: summary, status chart, throughput chart, rejected rows, item table and
    operations table; a ledger used only by apply gets the summary, refused rows and operations only."""
    summary = report.summary
    only_ops = _operations_only(summary)
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(summary))
    rejected = ""
    if report.rejected:
        rows = "".join(
            f"<tr><td>{r['row']}</td><td>{html.escape(str(r['field']))}</td>"
            f"<td>{html.escape(str(r['reason']))}</td></tr>"
            for r in report.rejected
        )
        heading = "Refused operation rows" if only_ops else "Rejected inventory rows"
        rejected = (
            f"<h2>{heading}</h2><table><thead><tr><th>row</th><th>field</th><th>reason</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    if only_ops:
        title, head, items = "videoferry operations report", operations_headline(summary), rejected
    elif summary.get("archive") and not summary.get("items"):
        archived = summary["archive"]
        title, items = "videoferry archive report", rejected
        head = f"<p>{archived['recordings']} recordings archived, {len(archived['failed'])} steps failed.</p>"
    elif summary.get("backup") and not summary.get("items"):
        kept = summary["backup"]
        title, items = "videoferry backup report", rejected
        head = f"<p>{kept['videos']} videos kept, {len(kept['failed'])} steps failed.</p>"
    else:
        title, head = "videoferry migration report", items_headline(summary)
        items = items_html(summary, report.timeline, report.items, rejected)
    if report.run is not None:
        title = TITLES.get(report.run.job, title)
    if report.last_run:
        head += f"\n<p>{html.escape(report.last_run)}</p>"
    if report.run is not None:
        head += "".join(f"\n<p>{html.escape(line)}</p>" for line in report.run.lines)
    sections = operations_html(report.operations) + archive_html(report.archive) + backup_html(report.backup)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
{PAGE_STYLE}
</style></head>
<body>
<h1>{title}</h1>
{head}
<ul>{lines}</ul>
{items}
{sections}
</body></html>
"""


def write_ledger_report(report: Report, out_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Write the report in each format into out_dir: items and summary tables always, operations and archive
    tables when the ledger has them, report.json and report.html; returns the files written."""
    tables = [("items", report.items), ("summary", summary_frame(report.summary))]
    optional = [("operations", report.operations), ("archive", report.archive), ("backup", report.backup)]
    tables += [(name, frame) for name, frame in optional if not frame.is_empty()]
    document: dict[str, Any] = {
        "summary": report.summary,
        "rejected": report.rejected,
        "items": report.items.to_dicts(),
        "operations": report.operations.to_dicts(),
        "archive": report.archive.to_dicts(),
        "backup": report.backup.to_dicts(),
    }
    if report.run is not None:
        document["this_run"] = {
            "job": report.run.job,
            "run_id": report.run.run_id,
            "status": report.run.status,
            **report.run.figures,
        }
    return write_report_files(
        out_dir, tables, document=document, page=lambda: render_html(report), formats=formats
    )


def report_only(
    ledger: str, report_dir: str, formats: tuple[str, ...], notes: list[str] | None = None
) -> tuple[Report, list[Path]]:
    """Write the report of an existing ledger, a path or s3:// (no run, no lock, no API call); `notes` gets
    a line when a remote ledger's copy may be behind."""
    from flows.job import read_ledger
    from state.errors import LedgerError

    with read_ledger(ledger, notes) as book:
        if book is None:
            raise LedgerError(f"ledger {ledger} does not exist")
        report = build_report(book)
    return report, write_ledger_report(report, Path(report_dir), formats)
