"""The migrate job's report: the item table, the completion timeline, the item lines and charts."""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

import polars as pl

from videoferry.core.item import PLATFORM_SOURCE_RE, ItemSpec
from videoferry.core.redact import safe_uri
from videoferry.state.machine import FINISHED, STATES
from videoferry.state.models import Item
from videoferry.state.reader import LedgerReader
from videoferry.tasks.report_files import html_table
from videoferry.tasks.sessions import material_name

#: The states of an item that did not make it (listed wherever a person reads what went wrong).
FAILED_STATES = ("failed", "error", "aborted")

#: Colours of the status chart (end states stand out).
_COLOURS = {
    "finished": "#2e7d32",
    "done": "#66bb6a",
    "failed": "#c62828",
    "error": "#e53935",
    "aborted": "#8e24aa",
}


def item_rows(ledger: LedgerReader) -> list[dict[str, Any]]:
    """The items as report rows (no upload endpoint: report rows do not carry it; sources made safe)."""
    rows = ledger.report_rows()
    for row in rows:
        row["source"] = safe_uri(str(row.get("source") or ""))
        row["attachments"] = attachment_names(row.get("attachments"))
    if any(_from_platform(row) for row in rows):
        # Which file of a platform video was taken, its page, created date and folder: the note its
        # create journalled (tasks/migrate/platform_source.py); the latest one for each item.
        origins = {
            e.key: e.message
            for e in ledger.events()
            if e.kind == "note" and e.key and e.message and e.message.startswith(ORIGIN_NOTE)
        }
        for row in rows:
            row["source_file"] = origins.get(str(row.get("key")))
    return rows


def _from_platform(row: dict[str, Any]) -> bool:
    return bool(PLATFORM_SOURCE_RE.match(str(row.get("source")))) or str(row.get("key")).startswith(
        "youtube:"
    )


#: How the note a platform video's create journals begins (tasks/migrate/platform_source._journal).
ORIGIN_NOTE = "bytes from "


def attachment_names(stored: str | None) -> str | None:
    """An item's attachments as the report shows them: their material names joined by ", " (None: none)."""
    if not stored:
        return None
    return ", ".join(material_name(safe_uri(str(s))) for s in json.loads(stored))


def spec_name(spec: ItemSpec) -> str:
    """How a person knows an item: its source (a URL without its query string), then row and key."""
    source = safe_uri(spec.source) if spec.source else "(no source)"
    return f"{source} (row {spec.row}, key {spec.key})"


def size_text(size: float) -> str:
    """A byte count as a person reads it: `812 B`, `1.6 MB`, `2.3 GB` (powers of 1000)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


def failed_item_line(item: Item) -> str:
    """One failed item for the terminal, the status and the artifacts: its source, state and error."""
    code = f" {item.error_code}" if item.error_code else ""
    return f"{spec_name(item.spec)}: {item.state}{code}: {item.error_message or 'no message recorded'}"


def failed_item_record(item: Item) -> dict[str, Any]:
    """One failed item as `status --json` and report.json give it (no secret: no endpoint, safe source)."""
    return {
        "source": safe_uri(item.spec.source) if item.spec.source else None,
        "row": item.spec.row,
        "key": item.key,
        "title": item.spec.title,
        "state": item.state,
        "video_id": item.video_id,
        "error_code": item.error_code,
        "error_message": item.error_message,
    }


def items_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The item table (an empty frame without items)."""
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def _bucket(span_seconds: float) -> str:
    """A bucket size that gives a readable number of points for a run of this length."""
    for limit, every in ((120, "2s"), (600, "10s"), (3600, "1m"), (6 * 3600, "5m")):
        if span_seconds <= limit:
            return every
    return "30m"


def timeline(ledger: LedgerReader, rows: list[dict[str, Any]]) -> pl.DataFrame:
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


def run_lines(this_run: dict[str, Any]) -> list[str]:
    """What one run did to the items (a summary's `this_run`: state/activity.item_activity, with the bytes
    its uploads sent and their rate), apart from what the ledger holds from earlier runs."""
    done = this_run.get("already_done", 0)
    moved = ("created", "completed", "failed", "bytes")
    if not any(this_run.get(name) for name in moved):
        lines = [f"this run: nothing sent; {done} items already done (skipped)"]
    else:
        retried = this_run.get("retried", 0)
        lines = [
            f"this run: {this_run.get('created', 0)} created"
            + (f" ({retried} of them failed before: retried)" if retried else "")
            + f", {this_run.get('completed', 0)} completed, {this_run.get('failed', 0)} failed;"
            f" {done} items already done (skipped)"
        ]
    sent = int(this_run.get("bytes") or 0)
    rate = this_run.get("throughput_bytes_per_second")
    at = f" at {rate / 1e6:.2f} MB/s" if rate else ""
    lines.append(f"this run: {size_text(sent)} sent{at}; calls retried: {this_run.get('call_retries', 0)}")
    return lines


def items_lines(summary: dict[str, Any]) -> list[str]:
    """The item counts, bytes, throughput, retries, error codes and rejected rows of a ledger summary (what
    one run did first, when the summary has `this_run`; the ledger's figures cover all its runs)."""
    counts = {k: v for k, v in summary.get("counts", {}).items() if v}
    this_run = summary.get("this_run")
    lines = run_lines(this_run) if this_run else []
    lines += [
        f"items: {summary.get('items', 0)} ({', '.join(f'{k} {v}' for k, v in counts.items()) or 'none'})",
        f"complete: {summary.get('complete', 0)}",
        f"bytes uploaded: {summary.get('bytes_uploaded', 0)} of {summary.get('bytes_total', 0)}",
    ]
    every = " (all runs of this ledger)"
    rate = summary.get("throughput_bytes_per_second")
    if rate:
        lines.append(f"throughput{every}: {rate / 1e6:.2f} MB/s")
    materials = summary.get("attachments") or {}
    if materials.get("materials"):
        lines.append(
            f"attachments: {materials['attached']} of {materials['materials']} materials on finished items"
        )
    lines.append(f"retries{every}: {summary.get('retries', 0)}")
    if summary.get("error_codes"):
        lines.append("error codes: " + ", ".join(f"{k} x{v}" for k, v in summary["error_codes"].items()))
    if summary.get("rejected_rows"):
        lines.append(f"rejected inventory rows: {summary['rejected_rows']}")
    return lines + warning_lines(summary)


#: Warnings a summary's text shows (report.json and report.html carry every one the summary holds).
SHOWN_WARNINGS = 20


def warning_lines(summary: dict[str, Any]) -> list[str]:
    """The summary's warnings: what the service did that is not a failure (a title it cut to its cap)."""
    warnings = summary.get("warnings") or []
    if not warnings:
        return []
    lines = [f"warnings: {len(warnings)}"]
    lines += [f"  {w['key']}: {w['message']}" for w in warnings[:SHOWN_WARNINGS]]
    if len(warnings) > SHOWN_WARNINGS:
        lines.append(f"  ... and {len(warnings) - SHOWN_WARNINGS} more (report.json has them all)")
    return lines


def _warnings_html(summary: dict[str, Any]) -> str:
    warnings = summary.get("warnings") or []
    if not warnings:
        return ""
    items = "".join(
        f"<li>{html.escape(str(w['key']))}: {html.escape(str(w['message']))}</li>" for w in warnings
    )
    return f"<h2>Warnings</h2>\n<ul>{items}</ul>\n"


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


#: Completions spread over less than this many seconds are said in a sentence, not drawn.
SHORT_RUN_SECONDS = 10.0


def _line_chart(timeline: pl.DataFrame) -> str:
    """Cumulative items done and MB uploaded over time, each scaled to its own maximum."""
    if timeline.is_empty():
        return "<p>No completions yet.</p>"
    times: list[datetime] = timeline["time"].to_list()
    done: list[int] = timeline["done"].to_list()
    mbytes = [b / 1e6 for b in timeline["bytes"].to_list()]
    seconds = times[-1].timestamp() - times[0].timestamp()
    if seconds < SHORT_RUN_SECONDS or len(set(times)) < 3:  # a line of one or two points says nothing
        return (
            f"<p>{done[-1]} items done and {mbytes[-1]:.2f} MB uploaded, the last {seconds:.1f} s after the"
            " first: too short a run for a chart over time.</p>"
        )
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


ITEM_COLUMNS = (
    "row",
    "source",
    "key",
    "title",
    "state",
    "status",
    "video_id",
    "via",
    "attachments",
    "bytes_total",
    "error_code",
    "error_message",
    "request_id",
    "attempts",
)


def items_headline(summary: dict[str, Any]) -> str:
    """The page's first line: how many items are finished."""
    finished = summary.get("counts", {}).get(FINISHED, 0)
    return f"<p>{finished} of {summary.get('items', 0)} items finished.</p>"


def items_html(summary: dict[str, Any], timeline: pl.DataFrame, items: pl.DataFrame, rejected: str) -> str:
    """The page's item part: the status chart, the throughput chart, the rejected rows, the item table."""
    return (
        f'<div class="charts"><div><h2>Items by state</h2>{_bar_chart(summary.get("counts", {}))}</div>\n'
        f"<div><h2>Throughput over time</h2>{_line_chart(timeline)}</div></div>\n"
        f"{rejected}\n{_warnings_html(summary)}<h2>Items</h2>\n{html_table(items, ITEM_COLUMNS)}"
    )
