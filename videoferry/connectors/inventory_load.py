"""An inventory's rows as text, unchecked: a CSV / TSV / Parquet / JSONL file, an S3 listing, a platform."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from botocore.exceptions import BotoCoreError, ClientError

from videoferry.connectors.input_files import InputFileError, detect_format, read_input
from videoferry.connectors.inventory_normalise import INPUT_COLUMNS, short
from videoferry.connectors.inventory_sources import ListingSkips, SourceBase, filter_listing
from videoferry.connectors.path_filter import PathFilter
from videoferry.connectors.platforms.origins import Origins
from videoferry.connectors.platforms.source_rows import read_folder_map, source_rows
from videoferry.connectors.platforms.takeout import is_takeout_source, takeout_rows
from videoferry.connectors.s3 import S3Config, client_error_code, list_prefix, parse_s3_uri, shared_s3_client
from videoferry.core.item import RowError
from videoferry.core.redact import safe_uri, scrub_urls

__all__ = ["FORMATS", "InventoryError", "Loaded", "as_text", "load", "load_platform"]


FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


class InventoryError(InputFileError):
    """The inventory as a whole cannot be read (missing, unreadable, unknown format, no source column)."""


@dataclass
class Loaded:
    """An inventory as read, before its cells are checked: the rows as text, and what reading found."""

    frame: pl.DataFrame  # row (Int64), INPUT_COLUMNS (String), size (Int64)
    format: str
    base: SourceBase
    unknown_columns: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    skipped: ListingSkips | None = None
    origins: Origins = field(default_factory=Origins)


# ---------------------------------------------------------------------------------------------- public


def load(uri: str, *, s3: S3Config | None, format: str | None, path_filter: PathFilter) -> Loaded:
    if uri.startswith("s3://"):
        bucket, key = parse_s3_uri(uri)
        if key == "" or key.endswith("/"):
            return _load_listing(uri, bucket, key, s3, path_filter)
    if path_filter.given:
        raise InventoryError(
            f"--include/--exclude choose objects of an s3://bucket/prefix/ listing; {safe_uri(uri)} is "
            "a file (its rows say what to migrate)"
        )
    hint = " (end the uri with / to migrate every object under a prefix)"
    try:
        data, name, base = read_input(uri, s3, what="inventory", missing_hint=hint)
        fmt = detect_format(uri, name, format, FORMATS, what="inventory")
    except InputFileError as exc:
        raise InventoryError(str(exc)) from None
    return _parse(uri if uri.startswith("s3://") else str(Path(base.local_dir or "") / name), data, fmt, base)


def _parse(label: str, data: bytes, fmt: str, base: SourceBase) -> Loaded:
    if fmt == "jsonl":
        return _parse_jsonl(label, data, base)
    try:
        if fmt in ("csv", "tsv"):
            if not data.strip():
                df = pl.DataFrame()
            else:
                df = pl.read_csv(
                    io.BytesIO(data),
                    infer_schema=False,
                    separator="\t" if fmt == "tsv" else ",",
                    truncate_ragged_lines=True,
                )
        else:
            df = pl.read_parquet(io.BytesIO(data)) if data else pl.DataFrame()
    except pl.exceptions.NoDataError:
        df = pl.DataFrame()
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise InventoryError(f"cannot parse inventory {label} as {fmt}: {scrub_urls(first_line)}") from None
    return _from_table(label, df, fmt, base)


def _from_table(label: str, df: pl.DataFrame, fmt: str, base: SourceBase) -> Loaded:
    names = [str(c).strip().lower() for c in df.columns]
    seen: set[str] = set()
    for name in names:
        dup = re.fullmatch(r"(.+)_duplicated_\d+", name)
        if name in seen or (dup and dup.group(1) in names):
            raise InventoryError(
                f"inventory {label}: column {(dup.group(1) if dup else name)!r} appears twice"
            )
        seen.add(name)
    df = df.rename(dict(zip(df.columns, names, strict=True)))
    df = df.select([as_text(df[c]) for c in df.columns])
    if df.height and "source" not in df.columns:
        raise InventoryError(
            f"inventory {label} has no 'source' column (columns: {', '.join(df.columns)[:200]})"
        )
    loaded = Loaded(frame=pl.DataFrame(), format=fmt, base=base)
    loaded.unknown_columns = [c for c in df.columns if c not in INPUT_COLUMNS]
    df = df.with_row_index("row", offset=1).with_columns(pl.col("row").cast(pl.Int64))
    if df.height and df.width > 1:
        blank = pl.all_horizontal(
            [pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "") for c in df.columns if c != "row"]
        )
        empty = df.filter(blank)["row"].to_list()
        if empty:
            df = df.filter(~blank)
            noun = "row" if len(empty) == 1 else "rows"
            loaded.warnings.append(f"skipped {len(empty)} empty {noun} ({_row_list(empty)})")
    loaded.frame = _with_input_columns(df)
    return loaded


def as_text(s: pl.Series) -> pl.Series:
    """Any column -> String; nested values (lists, structs) become JSON text for the cell parsers."""
    if s.dtype == pl.String:
        return s
    if s.dtype.is_nested():
        values = [None if v is None else json.dumps(v, default=str) for v in s.to_list()]
        return pl.Series(s.name, values, dtype=pl.String)
    if s.dtype == pl.Boolean:
        return s.cast(pl.String).str.to_lowercase()
    return s.cast(pl.String)


def _parse_jsonl(label: str, data: bytes, base: SourceBase) -> Loaded:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InventoryError(
            f"cannot parse inventory {label} as jsonl: not UTF-8 (byte {exc.start})"
        ) from None
    loaded = Loaded(frame=pl.DataFrame(), format="jsonl", base=base)
    columns: dict[str, list[str | None]] = {c: [] for c in INPUT_COLUMNS}
    row_numbers: list[int] = []
    unknown: dict[str, None] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            loaded.errors.append(
                RowError(lineno, "record", short(line), f"invalid JSON ({exc.msg} at char {exc.pos})")
            )
            continue
        if not isinstance(obj, dict):
            loaded.errors.append(RowError(lineno, "record", short(line), "expected a JSON object"))
            continue
        record = {str(k).strip().lower(): v for k, v in obj.items()}
        for k in record:
            if k not in columns:
                unknown.setdefault(k)
        row_numbers.append(lineno)
        for c in INPUT_COLUMNS:
            v = record.get(c)
            columns[c].append(None if v is None else v if isinstance(v, str) else _json_scalar(v))
    loaded.unknown_columns = list(unknown)
    frame = pl.DataFrame(
        {"row": pl.Series(row_numbers, dtype=pl.Int64)}
        | {c: pl.Series(c, columns[c], dtype=pl.String) for c in INPUT_COLUMNS}
    )
    loaded.frame = _with_input_columns(frame)
    return loaded


def _json_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    return json.dumps(v)


def _load_listing(uri: str, bucket: str, prefix: str, s3: S3Config | None, path_filter: PathFilter) -> Loaded:
    client = shared_s3_client(s3)
    try:
        taken, skips = filter_listing(list_prefix(client, bucket, prefix), prefix, path_filter)
    except ClientError as exc:
        code = client_error_code(exc)
        if code == "NoSuchBucket":
            raise InventoryError(f"cannot list {uri}: no such bucket") from None
        raise InventoryError(f"cannot list {uri}: S3 error {code or 'unknown'}") from None
    except BotoCoreError as exc:
        raise InventoryError(f"cannot list {uri}: {type(exc).__name__}") from None
    frame = pl.DataFrame(
        {
            "row": pl.Series(range(1, len(taken) + 1), dtype=pl.Int64),
            "source": pl.Series([f"s3://{bucket}/{key}" for key, _ in taken], dtype=pl.String),
            "size": pl.Series([size for _, size in taken], dtype=pl.Int64),
        }
    )
    loaded = Loaded(frame=_with_input_columns(frame), format="s3-listing", base=SourceBase(), skipped=skips)
    if skips.markers:
        loaded.warnings.append(f"skipped {skips.markers} folder marker objects (keys ending in /)")
    line = skips.line(safe_uri(uri))
    if line:
        loaded.warnings.append(line)
    return loaded


def load_platform(uri: str, folder_map: str | None, captions: str | None) -> Loaded:
    if is_takeout_source(uri):
        listed = takeout_rows(uri)
    else:
        into = Path(captions).expanduser() if captions else None
        listed = source_rows(uri, read_folder_map(folder_map), captions=into)
    rows = listed.frame()
    frame = rows.select([c for c in rows.columns if c in INPUT_COLUMNS]).with_row_index("row", offset=1)
    frame = frame.with_columns(pl.col("row").cast(pl.Int64))
    loaded = Loaded(frame=_with_input_columns(frame), format="platform", base=SourceBase())
    loaded.warnings.extend(listed.notes)
    loaded.origins = listed.origins
    return loaded


def _with_input_columns(df: pl.DataFrame) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=pl.String).alias(c) for c in INPUT_COLUMNS if c not in df.columns]
    if "size" not in df.columns:
        missing.append(pl.lit(None, dtype=pl.Int64).alias("size"))
    df = df.with_columns(missing)
    return df.select("row", *INPUT_COLUMNS, "size")


def _row_list(rows: list[int], limit: int = 10) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return (
        ("row " if len(rows) == 1 else "rows ")
        + shown
        + (f" and {len(rows) - limit} more" if len(rows) > limit else "")
    )
