"""Inventory readers: CSV, Parquet, JSON Lines (local or S3) and S3 prefix listings, via polars."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from botocore.exceptions import BotoCoreError, ClientError

from videoferry.connectors.ids import normal_id
from videoferry.connectors.input_files import InputFileError, detect_format, read_input
from videoferry.connectors.inventory_normalise import (
    CHAPTER_DTYPE,
    INPUT_COLUMNS,
    OUTPUT_SCHEMA,
    empty_rows,
    field_rank,
    normalise,
    short,
)
from videoferry.connectors.inventory_sources import ListingSkips, SourceBase, filter_listing
from videoferry.connectors.path_filter import FilterError, PathFilter
from videoferry.connectors.platforms.listing import is_platform_source
from videoferry.connectors.platforms.source_rows import Origin, read_folder_map, source_rows
from videoferry.connectors.platforms.takeout import is_takeout_source, takeout_rows
from videoferry.connectors.s3 import (
    S3Config,
    client_error_code,
    list_prefix,
    parse_s3_uri,
    shared_s3_client,
)
from videoferry.core.fields import near_name, unknown_names
from videoferry.core.item import ItemSpec, RowError, item_spec
from videoferry.core.redact import safe_uri, scrub_urls

__all__ = [
    "CHAPTER_DTYPE",
    "INPUT_COLUMNS",
    "OUTPUT_SCHEMA",
    "Inventory",
    "InventoryError",
    "empty_rows",
    "read_inventory",
]

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
class Inventory:
    """Good rows (OUTPUT_SCHEMA), the rejected cells and file-level warnings."""

    uri: str
    format: str
    rows: pl.DataFrame
    errors: list[RowError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: What an S3 prefix listing skipped (None for a file inventory); its line() is also in warnings.
    skipped: ListingSkips | None = None
    #: A platform source's items: key -> where it came from (its page, created date, folder).
    origins: dict[str, Origin] = field(default_factory=dict)

    def keys(self) -> list[str]:
        """The key of every good row, in input order (no spec is made)."""
        return list(self.rows.get_column("key").to_list())

    @property
    def bad_rows(self) -> list[int]:
        """Row numbers with at least one error, ascending."""
        return sorted({e.row for e in self.errors if e.row is not None})

    def specs(self, skip: Collection[str] = ()) -> Iterator[ItemSpec]:
        """Every good row as the item it specifies, in input order (validated once, here); the rows whose key
        is in ``skip`` are left out before any is made into a spec."""
        rows = self.rows.filter(~pl.col("key").is_in(list(skip))) if skip else self.rows
        for (
            key,
            source,
            parent_id,
            via,
            title,
            row,
            size,
            description,
            tags,
            chapters,
            ptype,
            domains,
            attachments,
        ) in rows.select(_SPEC_FIELDS).iter_rows():
            yield item_spec(
                key=key,
                source=source,
                parent_id=parent_id,
                via=via,
                title=title,
                row=row,
                source_size=size,
                description=description,
                tags=tags,
                chapters=chapters,
                privacy_type=ptype,
                privacy_domains=domains,
                attachments=attachments,
            )


#: The OUTPUT_SCHEMA columns an ItemSpec is made of, in the order Inventory.specs() unpacks them.
_SPEC_FIELDS = (
    "key",
    "source",
    "parent_id",
    "via",
    "title",
    "row",
    "size",
    "description",
    "tags",
    "chapters",
    "privacy_type",
    "privacy_domains",
    "attachments",
)


@dataclass
class _Loaded:
    frame: pl.DataFrame  # row (Int64), INPUT_COLUMNS (String), size (Int64)
    format: str
    base: SourceBase
    unknown_columns: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    skipped: ListingSkips | None = None
    origins: dict[str, Origin] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- public


def read_inventory(
    uri: str,
    *,
    default_parent_id: str | None,
    via: str = "auto",
    s3: S3Config | None = None,
    format: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    ignore_case: bool = False,
    parent_map: Sequence[str] = (),
    folder_map: str | None = None,
    captions: str | None = None,
) -> Inventory:
    """Read and normalise an inventory: a CSV/TSV, Parquet or JSON Lines file (path, file:// or s3://),
    or ``s3://bucket/prefix/`` (trailing slash, or a bare bucket) to list the objects under it, or a
    platform source (``vimeo:``, ``wistia:project/<id>``..., listed now: connectors/platforms/source_rows.py,
    its folders put under parents by the ``folder_map`` file, its captions fetched into the ``captions``
    directory and attached).

    ``format`` ("csv", "tsv", "parquet", "jsonl") overrides detection by file extension. ``via`` (the --via
    option) routes every row; a source that cannot travel that way is a bad row. A listing takes video files
    only, or what rclone's ``include`` / ``exclude`` globs say (connectors/path_filter.py; ``ignore_case``
    is rclone's --ignore-case); what it skipped is in ``.skipped`` and one line of ``.warnings``.
    ``parent_map`` (the --parent-map option: ``OLD=NEW`` pairs, several per value joined by ``,``) puts the
    rows whose parent_id is OLD under NEW (a backup restored into another workspace: its folders' ids).
    Raises InventoryError when the inventory cannot be read at all (or a filter is given for a file, or a
    pattern or a pair cannot be read); bad rows go to ``.errors``.
    """
    default_parent = None
    if default_parent_id is not None and default_parent_id.strip():
        try:
            default_parent = normal_id(default_parent_id)
        except ValueError as exc:
            raise InventoryError(f"--parent-id {default_parent_id.strip()[:60]!r} is {exc}") from None
    try:
        path_filter = PathFilter(tuple(include), tuple(exclude), ignore_case)
    except FilterError as exc:
        raise InventoryError(f"--include/--exclude {exc}") from None
    for flag, given in (("--folder-map", folder_map), ("--captions", captions)):
        if given and not is_platform_source(uri):
            raise InventoryError(f"{flag} is for a vimeo: or wistia: source, not {safe_uri(uri)}")
    if is_platform_source(uri) or is_takeout_source(uri):
        if path_filter.given:
            raise InventoryError("--include/--exclude choose objects of an s3://bucket/prefix/ listing")
        loaded = _load_platform(uri, folder_map, captions)
    else:
        loaded = _load(uri, s3=s3, format=format, path_filter=path_filter)
    rows, errors = normalise(loaded.frame, loaded.base, default_parent, via, parse_parent_map(parent_map))
    errors = sorted(
        (
            RowError(e.row, e.field, scrub_urls(e.value), scrub_urls(e.reason))
            for e in [*loaded.errors, *errors]
        ),
        key=lambda e: (e.row, field_rank(e.field), e.field, e.reason),
    )
    warnings = [scrub_urls(w) for w in loaded.warnings]
    misspelled = [c for c in loaded.unknown_columns if near_name(c, INPUT_COLUMNS)]
    if misspelled:  # most probably meant as a known column, which every row would then go without
        raise InventoryError(
            f"{safe_uri(uri)}: unknown column{'s' * (len(misspelled) > 1)}"
            f" {unknown_names(misspelled, INPUT_COLUMNS)}"
            " (videoferry/connectors/INVENTORY.md lists the columns)"
        )
    if loaded.unknown_columns:
        warnings.insert(0, "ignored unknown columns: " + unknown_names(loaded.unknown_columns, INPUT_COLUMNS))
    return Inventory(
        uri=safe_uri(uri),
        format=loaded.format,
        rows=rows,
        errors=errors,
        warnings=warnings,
        skipped=loaded.skipped,
        origins=loaded.origins,
    )


def parse_parent_map(values: Sequence[str]) -> dict[str, str]:
    """--parent-map's pairs, ``OLD=NEW`` (several per value joined by ``,``; any id notation), as normal ids.

    Raises InventoryError naming a pair that is not two identifiers, or an OLD given two NEWs.
    """
    found: dict[str, str] = {}
    for value in values:
        for pair in (p.strip() for p in value.split(",")):
            if not pair:
                continue
            old, sep, new = (part.strip() for part in pair.partition("="))
            try:
                if not sep:
                    raise ValueError("not OLD=NEW")
                key, target = normal_id(old), normal_id(new)
            except ValueError as exc:
                raise InventoryError(
                    f"--parent-map {pair[:120]!r}: {exc} (expected OLD=NEW, two ids)"
                ) from None
            if found.get(key, target) != target:
                raise InventoryError(f"--parent-map names two new parents for {old}")
            found[key] = target
    return found


# ---------------------------------------------------------------------------------------------- loading


def _load(uri: str, *, s3: S3Config | None, format: str | None, path_filter: PathFilter) -> _Loaded:
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


def _parse(label: str, data: bytes, fmt: str, base: SourceBase) -> _Loaded:
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


def _from_table(label: str, df: pl.DataFrame, fmt: str, base: SourceBase) -> _Loaded:
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
    df = df.select([_as_text(df[c]) for c in df.columns])
    if df.height and "source" not in df.columns:
        raise InventoryError(
            f"inventory {label} has no 'source' column (columns: {', '.join(df.columns)[:200]})"
        )
    loaded = _Loaded(frame=pl.DataFrame(), format=fmt, base=base)
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


def _as_text(s: pl.Series) -> pl.Series:
    """Any column -> String; nested values (lists, structs) become JSON text for the cell parsers."""
    if s.dtype == pl.String:
        return s
    if s.dtype.is_nested():
        values = [None if v is None else json.dumps(v, default=str) for v in s.to_list()]
        return pl.Series(s.name, values, dtype=pl.String)
    if s.dtype == pl.Boolean:
        return s.cast(pl.String).str.to_lowercase()
    return s.cast(pl.String)


def _parse_jsonl(label: str, data: bytes, base: SourceBase) -> _Loaded:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InventoryError(
            f"cannot parse inventory {label} as jsonl: not UTF-8 (byte {exc.start})"
        ) from None
    loaded = _Loaded(frame=pl.DataFrame(), format="jsonl", base=base)
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


def _load_listing(
    uri: str, bucket: str, prefix: str, s3: S3Config | None, path_filter: PathFilter
) -> _Loaded:
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
    loaded = _Loaded(frame=_with_input_columns(frame), format="s3-listing", base=SourceBase(), skipped=skips)
    if skips.markers:
        loaded.warnings.append(f"skipped {skips.markers} folder marker objects (keys ending in /)")
    line = skips.line(safe_uri(uri))
    if line:
        loaded.warnings.append(line)
    return loaded


def _load_platform(uri: str, folder_map: str | None, captions: str | None) -> _Loaded:
    if is_takeout_source(uri):
        listed = takeout_rows(uri)
    else:
        into = Path(captions).expanduser() if captions else None
        listed = source_rows(uri, read_folder_map(folder_map), captions=into)
    columns = {c: pl.Series(c, [r.get(c) for r in listed.rows], dtype=pl.String) for c in INPUT_COLUMNS}
    frame = pl.DataFrame(
        {"row": pl.Series(range(1, len(listed.rows) + 1), dtype=pl.Int64)} | columns  # type: ignore[arg-type]
    )
    loaded = _Loaded(frame=_with_input_columns(frame), format="platform", base=SourceBase())
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
