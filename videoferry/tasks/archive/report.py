"""The archive's report: a run's recordings (archive.csv, .parquet, .json, .html); the ledger's archive
section."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from videoferry.state.machine import OpStatus
from videoferry.state.reader import LedgerReader
from videoferry.tasks.report_files import FORMATS, PAGE_STYLE, html_table, write_report_files

if TYPE_CHECKING:
    from videoferry.tasks.archive.recording import RecordingResult

__all__ = [
    "ARCHIVE_COLUMNS",
    "ARCHIVE_STEPS",
    "archive_frame",
    "archive_html",
    "archive_lines",
    "archive_summary",
    "write_report",
]

#: The files of a run's own report (archive.csv, .parquet, .json, .html): the formats of every job's report.
RUN_FORMATS = FORMATS
#: The steps of one recording, in order (op_key archive:<video_id>:<step>).
ARCHIVE_STEPS = ("copy", "sidecars", "move", "tags", "delete")


def archive_summary(reader: LedgerReader) -> dict[str, Any] | None:
    """Recordings archived (copy verified), bytes, each step's done count, failed steps; None without any."""
    latest: dict[str, Any] = {}
    for op in reader.ops():
        key = op.op_key or ""
        if key.startswith("archive:") and key.rsplit(":", 1)[-1] in ARCHIVE_STEPS:
            latest[key] = op  # oldest first: the last one wins
    if not latest:
        return None
    done = {step: 0 for step in ARCHIVE_STEPS}
    failed: list[dict[str, Any]] = []
    size = 0
    for key, op in latest.items():
        step = key.rsplit(":", 1)[-1]
        if op.status == OpStatus.DONE:
            done[step] += 1
            if step == "copy" and isinstance(op.result, dict):
                size += int(op.result.get("bytes") or 0)
        elif op.status == OpStatus.FAILED:
            failed.append({"op_key": key, "error_code": op.error_code, "error_message": op.error_message})
    return {"recordings": done["copy"], "bytes": size, "steps": done, "failed": failed}


def archive_lines(summary: dict[str, Any] | None) -> list[str]:
    """`archive: 6 recordings archived (1.2 MB), moved 6, deleted 0` and one line per failed step."""
    if not summary:
        return []
    steps = summary["steps"]
    lines = [
        f"archive: {summary['recordings']} recordings archived ({summary['bytes']} bytes); "
        f"moved {steps['move']}, tagged {steps['tags']}, deleted {steps['delete']}"
    ]
    lines += [
        f"  {f['op_key']}: failed {f['error_code'] or ''} {f['error_message'] or ''}"
        for f in summary["failed"]
    ]
    return lines


#: The archive table's columns (one row per recording whose copy is verified).
ARCHIVE_COLUMNS = (
    "event_id", "event_name", "stream_id", "video_id", "title", "quality", "bytes", "md5", "object_key",
    "archived_at",
)  # fmt: skip


def archive_frame(reader: LedgerReader) -> pl.DataFrame:
    """One row per archived recording (its latest verified copy): event, stream, video, bytes, md5, key."""
    latest: dict[str, Any] = {}
    for op in reader.ops(kind="archive"):
        if (op.op_key or "").endswith(":copy"):
            latest[op.op_key or ""] = op
    rows = [
        {c: (op.result or {}).get(c) for c in ARCHIVE_COLUMNS}
        for op in latest.values()
        if op.status == OpStatus.DONE and isinstance(op.result, dict)
    ]
    schema = {c: (pl.Int64 if c == "bytes" else pl.String) for c in ARCHIVE_COLUMNS}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def archive_html(frame: pl.DataFrame) -> str:
    """The report's archive section: bytes archived per event (bars) and the recordings; "" without any."""
    if frame.is_empty():
        return ""
    per_event = (
        frame.group_by("event_id", "event_name")
        .agg(pl.col("bytes").sum().alias("bytes"), pl.len().alias("recordings"))
        .sort("bytes", descending=True)
    )
    top = max([1, *(int(b or 0) for b in per_event["bytes"].to_list())])
    bars = "".join(
        f"<tr><td>{html.escape(str(r['event_name'] or r['event_id']))}</td><td>{r['recordings']}</td>"
        f'<td>{r["bytes"]}</td><td><div style="background:#4a7;height:12px;'
        f'width:{300 * r["bytes"] // top}px"></div></td></tr>'
        for r in per_event.iter_rows(named=True)
    )
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v if v is not None else ''))}</td>" for v in row) + "</tr>"
        for row in frame.select(ARCHIVE_COLUMNS).iter_rows()
    )
    head = "".join(f"<th>{c}</th>" for c in ARCHIVE_COLUMNS)
    return (
        "<h2>Archived bytes per event</h2><table><thead><tr><th>event</th><th>recordings</th><th>bytes</th>"
        f"<th></th></tr></thead><tbody>{bars}</tbody></table>\n"
        f"<h2>Archived recordings</h2><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def write_report(results: Sequence[RecordingResult], folder: str | Path) -> list[Path]:
    """archive.csv, archive.parquet and archive.json: one row per recording seen by the run."""
    rows = [{**asdict(r), "steps": ",".join(r.steps)} for r in results]
    schema = {
        "event_id": pl.String,
        "stream_id": pl.String,
        "video_id": pl.String,
        "state": pl.String,
        "reason": pl.String,
        "bytes": pl.Int64,
        "object_key": pl.String,
        "steps": pl.String,
    }
    frame = pl.DataFrame(rows, schema=schema)
    return write_report_files(
        Path(folder),
        [("archive", frame)],
        document=frame.to_dicts(),
        page=lambda: _run_page(frame),
        name="archive",
        formats=RUN_FORMATS,
    )


def _run_page(frame: pl.DataFrame) -> str:
    """archive.html: how many recordings ended in each state, then one row per recording seen by the run."""
    counts = frame.group_by("state").len().sort("state").iter_rows() if not frame.is_empty() else []
    said = ", ".join(f"{n} {state}" for state, n in counts) or "no recording"
    table = html_table(frame, list(frame.columns), noun="recordings")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>videoferry archive run</title>\n'
        f"<style>\n{PAGE_STYLE}\n</style></head>\n<body><h1>videoferry archive run</h1>\n"
        f"<p>{html.escape(said)}.</p>\n{table}\n</body></html>\n"
    )
