"""Check: the optional `duration` column of an inventory (seconds, by row), for accounts keeping no originals.

The inventory reader ignores columns it does not know (and names them in a warning); check reads this one
itself, with the same row numbers (CSV/TSV: first data row 1; Parquet: index + 1; JSON Lines: line number).
"""

from __future__ import annotations

import io
import json

import polars as pl

from videoferry.connectors.input_files import InputFileError, read_input
from videoferry.connectors.s3 import S3Config

COLUMN = "duration"


def _seconds(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        return None
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    return seconds if seconds >= 0 else None


def _from_frame(frame: pl.DataFrame, first_row: int) -> dict[int, float]:
    names = {c.strip().lower(): c for c in frame.columns}
    if COLUMN not in names:
        return {}
    out: dict[int, float] = {}
    for index, value in enumerate(frame[names[COLUMN]].to_list()):
        seconds = _seconds(value)
        if seconds is not None:
            out[index + first_row] = seconds
    return out


def inventory_durations(uri: str, s3: S3Config | None) -> dict[int, float]:
    """{row: seconds} of the inventory's `duration` column (seconds or h:mm:ss); {} when it has none.

    An s3:// prefix listing has no columns; an unreadable file gives {} (the inventory reader reports it).
    """
    if uri.startswith("s3://") and (uri.endswith("/") or uri.count("/") <= 2):
        return {}
    try:
        data, name, _ = read_input(uri, s3, what="inventory")
    except InputFileError:
        return {}
    lower = name.lower()
    try:
        if lower.endswith((".parquet", ".pq")):
            return _from_frame(pl.read_parquet(io.BytesIO(data)), 1)
        if lower.endswith((".jsonl", ".ndjson")):
            out: dict[int, float] = {}
            for number, line in enumerate(data.decode("utf-8-sig").splitlines(), start=1):
                record = json.loads(line) if line.strip() else None
                if isinstance(record, dict):
                    cells = {str(k).strip().lower(): v for k, v in record.items()}
                    seconds = _seconds(cells.get(COLUMN))
                    if seconds is not None:
                        out[number] = seconds
            return out
        separator = "\t" if lower.endswith(".tsv") else ","
        frame = pl.read_csv(
            io.BytesIO(data), separator=separator, infer_schema=False, truncate_ragged_lines=True
        )
        return _from_frame(frame, 1)
    except (ValueError, pl.exceptions.PolarsError):
        return {}
