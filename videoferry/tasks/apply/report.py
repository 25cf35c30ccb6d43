"""The apply job's report: the operations (apply units) table, counts, summary lines, failures and HTML."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from videoferry.state.applied import Unit
from videoferry.state.machine import UnitState
from videoferry.tasks.report_files import html_table

#: The operations table's columns and types (Unit.report_row's keys): an all-empty column keeps its type.
OPERATION_SCHEMA = pl.Schema(
    {
        "unit": pl.String(),
        "op_id": pl.String(),
        "row": pl.Int64(),
        "kind": pl.String(),
        "target": pl.String(),
        "video_id": pl.String(),
        "state": pl.String(),
        "result_id": pl.String(),
        "params": pl.String(),
        "detail": pl.String(),
        "error_code": pl.String(),
        "error_message": pl.String(),
        "attempts": pl.Int64(),
        "done_at": pl.String(),
    }
)
#: The columns of the HTML page's operations table ("error" is code and message in one).
HTML_COLUMNS = ("row", "kind", "op_id", "target", "video_id", "result_id", "state", "detail", "error")


def operations_frame(units: Sequence[Unit]) -> pl.DataFrame:
    """The units as a table (secret-free report rows); an empty frame when there are none."""
    if not units:
        return pl.DataFrame()
    return pl.DataFrame([u.report_row() for u in units], schema=OPERATION_SCHEMA, orient="row")


def operations_summary(units: Sequence[Unit]) -> dict[str, Any] | None:
    """How many units, per state (zeros included, in UnitState order), and failed units' error codes."""
    if not units:
        return None
    counts = {state: sum(1 for u in units if u.state == state) for state in tuple(UnitState)}
    codes: dict[str, int] = {}
    for u in units:
        if u.state == UnitState.FAILED and u.error_code:
            codes[u.error_code] = codes.get(u.error_code, 0) + 1
    found: dict[str, Any] = {"units": len(units), "counts": counts}
    if codes:
        found["error_codes"] = dict(sorted(codes.items(), key=lambda kv: (-kv[1], kv[0])))
    return found


def operations_complete(summary: dict[str, Any]) -> bool:
    """Whether every unit of a summary's operations is done (true when there are none)."""
    ops = summary.get("operations")
    return not ops or ops["counts"].get(UnitState.DONE, 0) == ops["units"]


def operations_lines(summary: dict[str, Any]) -> list[str]:
    """`operations: 7 (done 6, failed 1)` and the failures' error codes; nothing without units."""
    ops = summary.get("operations")
    if not ops:
        return []
    counts = ", ".join(f"{state} {n}" for state, n in ops["counts"].items() if n) or "none"
    lines = [f"operations: {ops['units']} ({counts})"]
    if ops.get("error_codes"):
        codes = ", ".join(f"{k} x{v}" for k, v in ops["error_codes"].items())
        lines.append(f"operation error codes: {codes}")
    return lines


def failed_lines(frame: pl.DataFrame, limit: int) -> list[str]:
    """The first `limit` failed units of an operations table: row, kind, unit key, error code and message."""
    if frame.is_empty():
        return []
    failed = frame.filter(pl.col("state") == UnitState.FAILED).head(limit)
    return [
        f"row {r['row']} {r['kind']} {r['unit']}: {r['state']} {r['error_code']}: {r['error_message']}"
        for r in failed.iter_rows(named=True)
    ]


def html_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The operations table as the HTML page shows it: HTML_COLUMNS, the error as `code: message`."""
    if frame.is_empty():
        return frame
    error = (
        pl.when(pl.col("error_code").is_null() & pl.col("error_message").is_null())
        .then(None)
        .otherwise(
            pl.concat_str(
                [pl.col("error_code").fill_null(""), pl.col("error_message").fill_null("")], separator=": "
            )
        )
    )
    return frame.with_columns(error.alias("error")).select(HTML_COLUMNS)


def operations_headline(summary: dict[str, Any]) -> str:
    """The page's first line when the ledger holds only operations: how many are done."""
    ops = summary["operations"]
    return f"<p>{ops['counts'].get('done', 0)} of {ops['units']} operations done.</p>"


def operations_html(frame: pl.DataFrame) -> str:
    """The page's operations part ("" without any)."""
    if frame.is_empty():
        return ""
    return f"<h2>Operations</h2>\n{html_table(html_frame(frame), HTML_COLUMNS, noun='operations')}"
