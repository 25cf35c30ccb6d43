"""Reports from the ledger with polars: item and operation tables, summary as CSV, Parquet, JSON and HTML."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from core.redact import safe_uri
from state.ledger import Ledger
from state.machine import FINISHED, STATES
from tasks.archive_report import archive_frame, archive_html, archive_lines, archive_summary
from tasks.report_ops import (
    HTML_COLUMNS,
    failed_lines,
    html_frame,
    operations_frame,
    operations_lines,
    operations_summary,
)

FORMATS = ("csv", "parquet", "json", "html")
#: Colours of the status chart (end states stand out).
_COLOURS = {
    "finished": "#2e7d32",
    "done": "#66bb6a",
    "failed": "#c62828",
    "error": "#e53935",
    "aborted": "#8e24aa",
}


@dataclass
class Report:
    """What a run produced: the per-item table, the summary, rejected rows, a completion timeline, and the
    operations table (one row per apply unit; empty when the ledger has none)."""

    items: pl.DataFrame
    summary: dict[str, Any]
    rejected: list[dict[str, Any]] = field(default_factory=list)
    timeline: pl.DataFrame = field(default_factory=pl.DataFrame)
    operations: pl.DataFrame = field(default_factory=pl.DataFrame)
    archive: pl.DataFrame = field(default_factory=pl.DataFrame)  #: archived recordings (archive job)


def build_report(ledger: Ledger, *, rejected: list[dict[str, Any]] | None = None) -> Report:
    """Read the ledger into a Report (never the upload endpoint: report rows do not carry it)."""
    rows = ledger.report_rows()
    for row in rows:
        row["source"] = safe_uri(str(row.get("source") or ""))
    items = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
    summary = ledger.summary()
    if rejected:
        summary["rejected_rows"] = len(rejected)
    units = ledger.units()
    ops = operations_summary(units)
    if ops:
        summary["operations"] = ops
    archived = archive_summary(ledger)
    if archived:
        summary["archive"] = archived
    timeline = _timeline(ledger, rows)
    return Report(
        items=items,
        summary=summary,
        rejected=list(rejected or []),
        timeline=timeline,
        operations=operations_frame(units),
        archive=archive_frame(ledger),
    )


def _bucket(span_seconds: float) -> str:
    """A bucket size that gives a readable number of points for a run of this length."""
    for limit, every in ((120, "2s"), (600, "10s"), (3600, "1m"), (6 * 3600, "5m")):
        if span_seconds <= limit:
            return every
    return "30m"


def _timeline(ledger: Ledger, rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Items that became done and bytes whose upload completed, per time bucket (cumulative columns)."""
    records: list[dict[str, Any]] = []
    sizes = {r["key"]: (r.get("bytes_total") or r.get("source_size") or 0) for r in rows}
    for event in ledger.events():
        if event.kind != "transition" or event.key is None:
            continue
        if event.to_state == "done":
            records.append({"time": event.time, "done": 1, "bytes": 0})
        elif event.to_state == "uploaded" or (
            event.from_state == "creating" and event.to_state == "processing"
        ):
            records.append({"time": event.time, "done": 0, "bytes": int(sizes.get(event.key, 0))})
    schema = pl.Schema({"time": pl.Datetime("us", "UTC"), "done": pl.Int64(), "bytes": pl.Int64()})
    if not records:
        return pl.DataFrame(schema=schema)
    frame = pl.DataFrame(records).with_columns(pl.col("time").dt.replace_time_zone("UTC"))
    start, end = frame["time"].min(), frame["time"].max()
    span = (end - start).total_seconds() if isinstance(start, datetime) and isinstance(end, datetime) else 0
    binned = frame.with_columns(pl.col("time").dt.truncate(_bucket(span)))
    per_bucket = binned.group_by("time").agg(pl.col("done").sum(), pl.col("bytes").sum()).sort("time")
    return per_bucket.with_columns(pl.col("done").cum_sum(), pl.col("bytes").cum_sum())


def summary_frame(summary: dict[str, Any]) -> pl.DataFrame:
    """The summary as a two-column table (metric, value) for CSV / Parquet (nested names joined by dots)."""
    flat: list[tuple[str, str]] = []

    def add(prefix: str, values: dict[str, Any]) -> None:
        for name, value in values.items():
            if isinstance(value, dict):
                add(f"{prefix}{name}.", value)
            else:
                flat.append((f"{prefix}{name}", "" if value is None else str(value)))

    add("", summary)
    return pl.DataFrame(flat, schema=["metric", "value"], orient="row")


def write_report(report: Report, out_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Write the report in each format into out_dir; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"unknown report format {fmt!r} (use {', '.join(FORMATS)})")
        if fmt == "csv":
            written += [out_dir / "items.csv", out_dir / "summary.csv"]
            _flat(report.items).write_csv(written[-2])
            summary_frame(report.summary).write_csv(written[-1])
            if not report.operations.is_empty():
                written.append(out_dir / "operations.csv")
                report.operations.write_csv(written[-1])
            if not report.archive.is_empty():
                written.append(out_dir / "archive.csv")
                report.archive.write_csv(written[-1])
        elif fmt == "parquet":
            written += [out_dir / "items.parquet", out_dir / "summary.parquet"]
            report.items.write_parquet(written[-2])
            summary_frame(report.summary).write_parquet(written[-1])
            if not report.operations.is_empty():
                written.append(out_dir / "operations.parquet")
                report.operations.write_parquet(written[-1])
            if not report.archive.is_empty():
                written.append(out_dir / "archive.parquet")
                report.archive.write_parquet(written[-1])
        elif fmt == "json":
            path = out_dir / "report.json"
            document = {
                "summary": report.summary,
                "rejected": report.rejected,
                "items": report.items.to_dicts(),
                "operations": report.operations.to_dicts(),
                "archive": report.archive.to_dicts(),
            }
            path.write_text(json.dumps(document, indent=2, default=str, ensure_ascii=False), encoding="utf-8")
            written.append(path)
        else:
            path = out_dir / "report.html"
            path.write_text(render_html(report), encoding="utf-8")
            written.append(path)
    return written


def _flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV cannot hold nested columns: encode any list/struct column as JSON text."""
    nested = [n for n, t in frame.schema.items() if isinstance(t, pl.List | pl.Struct)]
    if not nested:
        return frame
    return frame.with_columns(
        pl.col(n).map_elements(lambda v: json.dumps(v, default=str), return_dtype=pl.String) for n in nested
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
    counts = {k: v for k, v in summary.get("counts", {}).items() if v}
    lines = [
        f"items: {summary.get('items', 0)} ({', '.join(f'{k} {v}' for k, v in counts.items()) or 'none'})",
        f"complete: {summary.get('complete', 0)}",
        f"bytes uploaded: {summary.get('bytes_uploaded', 0)} of {summary.get('bytes_total', 0)}",
    ]
    rate = summary.get("throughput_bytes_per_second")
    if rate:
        lines.append(f"throughput: {rate / 1e6:.2f} MB/s")
    lines.append(f"retries: {summary.get('retries', 0)}")
    if summary.get("error_codes"):
        lines.append("error codes: " + ", ".join(f"{k} x{v}" for k, v in summary["error_codes"].items()))
    if summary.get("rejected_rows"):
        lines.append(f"rejected inventory rows: {summary['rejected_rows']}")
    return lines + operations_lines(summary) + archive_lines(summary.get("archive"))


def markdown(report: Report) -> str:
    """A short markdown summary (Prefect artifact)."""
    out = ["# videoferry migration", ""]
    out += [f"- {line}" for line in summary_lines(report.summary)]
    if report.rejected:
        out += ["", "## Rejected rows", ""]
        out += [f"- row {r['row']}, {r['field']}: {r['reason']}" for r in report.rejected[:200]]
    failed = failed_lines(report.operations, 200)
    if failed:
        out += ["", "## Failed operations", ""]
        out += [f"- {line}" for line in failed]
    return "\n".join(out)


def _bar_chart(counts: dict[str, int]) -> str:
    shown = [(s, counts.get(s, 0)) for s in STATES if counts.get(s, 0)]
    if not shown:
        return "<p>No items.</p>"
    top = max(v for _, v in shown)
    height = 26 * len(shown) + 10
    bars = []
    for i, (state, value) in enumerate(shown):
        width = 0 if top == 0 else 360 * value / top
        colour = _COLOURS.get(state, "#1e88e5")
        y = 5 + 26 * i
        bars.append(
            f'<text x="0" y="{y + 15}" font-size="13">{html.escape(state)}</text>'
            f'<rect x="90" y="{y}" width="{width:.1f}" height="20" fill="{colour}"/>'
            f'<text x="{96 + width:.1f}" y="{y + 15}" font-size="13">{value}</text>'
        )
    return f'<svg role="img" aria-label="items by state" width="520" height="{height}">{"".join(bars)}</svg>'


def _line_chart(timeline: pl.DataFrame) -> str:
    """Cumulative items done and MB uploaded over time, each scaled to its own maximum."""
    if timeline.is_empty():
        return "<p>No completions yet.</p>"
    times: list[datetime] = timeline["time"].to_list()
    done: list[int] = timeline["done"].to_list()
    mbytes = [b / 1e6 for b in timeline["bytes"].to_list()]
    width, height, pad = 560, 220, 40
    start = times[0].timestamp()
    span = max(times[-1].timestamp() - start, 1.0)
    top_done = max(max(done), 1)
    top_mb = max(max(mbytes), 1e-9)

    def points(values: list[float], top: float) -> list[tuple[float, float]]:
        out = [(float(pad), float(height - pad))]
        for when, value in zip(times, values, strict=True):
            x = pad + (width - 2 * pad) * (when.timestamp() - start) / span
            out.append((x, height - pad - (height - 2 * pad) * value / top))
        return out

    def line(values: list[float], top: float, colour: str) -> str:
        pts = points(values, top)
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"/>' for x, y in pts[1:])
        return f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>{dots}'

    seconds = times[-1].timestamp() - start
    return (
        f'<svg role="img" aria-label="throughput over time" width="{width}" height="{height}">'
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#999"/>'
        + line([float(d) for d in done], top_done, "#2e7d32")
        + line(mbytes, top_mb, "#1e88e5")
        + f'<text x="{pad}" y="{pad - 10}" font-size="12" fill="#2e7d32">items done (of {top_done})</text>'
        f'<text x="{pad + 200}" y="{pad - 10}" font-size="12" fill="#1e88e5">MB uploaded (of {top_mb:.1f})'
        "</text>"
        f'<text x="{pad}" y="{height - 12}" font-size="11">{times[0]:%H:%M:%S} UTC</text>'
        f'<text x="{width - pad - 120}" y="{height - 12}" font-size="11">+{seconds:.0f} s</text>'
        "</svg>"
    )


def _table(frame: pl.DataFrame, columns: tuple[str, ...], limit: int = 5000, noun: str = "items") -> str:
    present = [c for c in columns if c in frame.columns]
    if frame.is_empty() or not present:
        return f"<p>No {noun}.</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in present)
    body = []
    for row in frame.select(present).head(limit).iter_rows():
        cells = "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    more = f"<p>First {limit} of {frame.height} {noun}; the CSV has all.</p>" if frame.height > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


_ITEM_COLUMNS = (
    "row",
    "key",
    "title",
    "state",
    "status",
    "video_id",
    "via",
    "bytes_total",
    "error_code",
    "error_message",
    "request_id",
    "attempts",
)


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
        ops = summary["operations"]
        title = "videoferry operations report"
        head = f"<p>{ops['counts'].get('done', 0)} of {ops['units']} operations done.</p>"
        items = rejected
    else:
        title = "videoferry migration report"
        finished = summary.get("counts", {}).get(FINISHED, 0)
        head = f"<p>{finished} of {summary.get('items', 0)} items finished.</p>"
        items = (
            f'<div class="charts"><div><h2>Items by state</h2>{_bar_chart(summary.get("counts", {}))}</div>\n'
            f"<div><h2>Throughput over time</h2>{_line_chart(report.timeline)}</div></div>\n"
            f"{rejected}\n<h2>Items</h2>\n{_table(report.items, _ITEM_COLUMNS)}"
        )
    operations = ""
    if not report.operations.is_empty():
        table = _table(html_frame(report.operations), HTML_COLUMNS, noun="operations")
        operations = f"<h2>Operations</h2>\n{table}"
    operations += archive_html(report.archive)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>videoferry report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ddd; padding: 3px 6px; text-align: left; }}
th {{ background: #f4f4f4; }}
.charts {{ display: flex; gap: 3em; flex-wrap: wrap; }}
</style></head>
<body>
<h1>{title}</h1>
{head}
<ul>{lines}</ul>
{items}
{operations}
</body></html>
"""
