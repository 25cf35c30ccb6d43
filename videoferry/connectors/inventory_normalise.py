"""Normalising a raw inventory frame into checked rows and per-cell errors (vectorised polars)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any
from urllib.parse import unquote

import polars as pl

from videoferry.connectors.ids import normal_id
from videoferry.connectors.inventory_sources import (
    PLATFORM_PREFIX_RE,
    SCHEME_RE,
    SourceBase,
    parse_attachments,
    parse_source,
)
from videoferry.core.fields import FieldError, parse_chapters, parse_domains, parse_tags
from videoferry.core.item import PrivacyType, RowError, SourceKind, choose_via, derive_key

PRIVACY_TYPES = tuple(p.value for p in PrivacyType)

#: Columns a user may give, in report order.
INPUT_COLUMNS = (
    "source",
    "title",
    "parent_id",
    "description",
    "key",
    "tags",
    "chapters",
    "privacy_type",
    "privacy_domains",
    "attachments",
)

CHAPTER_DTYPE = pl.Struct({"time": pl.Float64(), "title": pl.String()})

#: The normalised frame: every good row, in input order.
OUTPUT_SCHEMA = pl.Schema(
    {
        "row": pl.Int64(),
        "source": pl.String(),
        "source_type": pl.String(),
        "filename": pl.String(),
        "size": pl.Int64(),
        "title": pl.String(),
        "description": pl.String(),
        "parent_id": pl.String(),
        "key": pl.String(),
        "tags": pl.List(pl.String),
        "chapters": pl.List(CHAPTER_DTYPE),
        "privacy_type": pl.String(),
        "privacy_domains": pl.List(pl.String),
        "attachments": pl.List(pl.String),
        "via": pl.String(),
    }
)

VALUE_MAX = 200
ERROR_SCHEMA = {"row": pl.Int64, "field": pl.String, "value": pl.String, "reason": pl.String}
_NEEDS_NORMPATH_RE = r"(^|/)\.{1,2}(/|$)|//"


def empty_rows() -> pl.DataFrame:
    """A zero-row frame with OUTPUT_SCHEMA."""
    return pl.DataFrame(schema=OUTPUT_SCHEMA)


# ---------------------------------------------------------------------------------------------- normalising


class _Errors:
    """Collects rejected cells as small frames (row, field, value, reason)."""

    def __init__(self) -> None:
        self.frames: list[pl.DataFrame] = []

    def add(
        self, df: pl.DataFrame, mask: pl.Expr, field_name: str, reason: pl.Expr | str, value: pl.Expr
    ) -> None:
        reason_expr = pl.lit(reason) if isinstance(reason, str) else reason
        self.frames.append(
            df.filter(mask.fill_null(False)).select(
                pl.col("row"),
                pl.lit(field_name).alias("field"),
                value.cast(pl.String).fill_null("").str.slice(0, VALUE_MAX).alias("value"),
                reason_expr.alias("reason"),
            )
        )

    def add_rows(self, items: Iterable[tuple[int, str, str, str]]) -> None:
        rows = list(items)
        if rows:
            self.frames.append(pl.DataFrame(rows, schema=ERROR_SCHEMA, orient="row"))

    def frame(self) -> pl.DataFrame:
        return pl.concat(self.frames) if self.frames else pl.DataFrame(schema=ERROR_SCHEMA)

    def rows_for(self, field_name: str) -> pl.Series:
        return self.frame().filter(pl.col("field") == field_name)["row"]


def normalise(
    df: pl.DataFrame,
    base: SourceBase,
    default_parent: str | None,
    via: str = "auto",
    parent_map: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, list[RowError]]:
    """Every good row of a raw frame in OUTPUT_SCHEMA, and every rejected cell (routing under `via` too);
    parent_map (normal ids) puts the rows of one parent_id under another."""
    if df.height == 0:
        return empty_rows(), []
    errors = _Errors()

    # Keep the raw cells for error values; then strip and turn blanks into nulls.
    df = df.with_columns([pl.col(c).alias(f"_raw_{c}") for c in INPUT_COLUMNS])
    df = df.with_columns(
        [_blank_to_null(pl.col(c).str.strip_chars()).alias(c) for c in INPUT_COLUMNS if c != "description"]
        + [_blank_to_null(pl.col("description"))]
    )

    df = _normalise_sources(df, base)
    errors.add(df, pl.col("source").is_null(), "source", "missing (every row needs a source)", pl.lit(""))
    errors.add(
        df, pl.col("_source_error").is_not_null(), "source", pl.col("_source_error"), pl.col("_safe_source")
    )

    df = _with_filenames(df)
    df = _normalise_parent(df, default_parent, errors, parent_map or {})
    df = _with_keys(df, errors)

    # tags, chapters, privacy domains, attachments: per-row parsing, cached on the cell text.
    parsed: dict[str, pl.Series] = {}
    for name, parser, dtype in (
        ("tags", parse_tags, pl.List(pl.String)),
        ("chapters", parse_chapters, pl.List(CHAPTER_DTYPE)),
        ("privacy_domains", parse_domains, pl.List(pl.String)),
        ("attachments", partial(parse_attachments, base=base), pl.List(pl.String)),
    ):
        texts, bad = _parse_cells(df["row"], df[name], parser)
        parsed[name] = pl.Series(name, texts, dtype=pl.String).str.json_decode(dtype)
        errors.add_rows((row, name, short(text), reason) for row, text, reason in bad)
    df = df.with_columns(
        parsed["tags"].alias("_tags"),
        parsed["chapters"].alias("_chapters"),
        parsed["privacy_domains"].alias("_domains"),
        parsed["attachments"].alias("_attachments"),
    )
    df = _normalise_privacy(df, errors)
    df = _route(df, via, errors)

    error_frame = errors.frame().unique(maintain_order=True)
    good = df.filter(~pl.col("row").is_in(error_frame["row"].unique().implode()))
    rows = good.select(
        pl.col("row"),
        pl.col("_source").alias("source"),
        pl.col("_source_type").alias("source_type"),
        pl.col("_filename").alias("filename"),
        pl.col("size"),
        pl.col("_title").alias("title"),
        pl.col("description"),
        pl.col("_parent").alias("parent_id"),
        pl.col("_key").alias("key"),
        pl.col("_tags").alias("tags"),
        pl.col("_chapters").alias("chapters"),
        pl.col("_ptype").alias("privacy_type"),
        pl.col("_domains").alias("privacy_domains"),
        pl.col("_attachments").alias("attachments"),
        pl.col("_via").alias("via"),
    )
    rows = rows.cast(OUTPUT_SCHEMA)
    return rows, [RowError(*t) for t in error_frame.iter_rows()]


def _blank_to_null(expr: pl.Expr) -> pl.Expr:
    return pl.when(expr.str.strip_chars() == "").then(None).otherwise(expr)


def _normalise_sources(df: pl.DataFrame, base: SourceBase) -> pl.DataFrame:
    """Add _source (canonical), _source_type (file|s3|url), _source_error and _safe_source (for messages).

    Common shapes (absolute or simple relative paths, s3://bucket/key, http(s) URLs) are handled in polars;
    the rest (file://, ~, '..', relative paths in an S3 inventory, odd schemes) by a per-row function.
    """
    src = pl.col("source")
    plain_abs = src.str.starts_with("/") & ~src.str.contains(_NEEDS_NORMPATH_RE)
    plain_rel = (
        pl.lit(base.local_dir is not None)
        & ~src.str.contains(SCHEME_RE)
        & ~src.str.contains("(?i)" + PLATFORM_PREFIX_RE)
        & ~src.str.starts_with("/")
        & ~src.str.starts_with("~")
        & ~src.str.contains(_NEEDS_NORMPATH_RE)
    )
    plain_s3 = src.str.contains(r"^s3://[^/]+/.*[^/]$")
    plain_url = src.str.contains(r"^https?://[^/?#\s@]+[^\s]*$")
    local_dir = base.local_dir.rstrip("/") if base.local_dir else ""
    df = df.with_columns(
        pl.when(plain_abs | plain_s3 | plain_url)
        .then(src)
        .when(plain_rel)
        .then(pl.lit(local_dir + "/") + src)
        .otherwise(None)
        .alias("_source"),
        pl.when(plain_abs | plain_rel)
        .then(pl.lit("file"))
        .when(plain_s3)
        .then(pl.lit("s3"))
        .when(plain_url)
        .then(pl.lit("url"))
        .otherwise(None)
        .alias("_source_type"),
        pl.lit(None, dtype=pl.String).alias("_source_error"),
        pl.lit(None, dtype=pl.String).alias("_safe_source"),
    )
    slow = df.select(pl.col("source").is_not_null() & pl.col("_source_type").is_null()).to_series()
    idx = slow.arg_true()
    if idx.len():
        results = [parse_source(v, base) for v in df["source"].gather(idx).to_list()]
        columns = {
            "_source": df["_source"].clone().scatter(idx, [r[0] for r in results]),
            "_source_type": df["_source_type"].clone().scatter(idx, [r[1] for r in results]),
            "_source_error": df["_source_error"].clone().scatter(idx, [r[2] for r in results]),
            "_safe_source": df["_safe_source"].clone().scatter(idx, [r[3] for r in results]),
        }
        df = df.with_columns([s.alias(name) for name, s in columns.items()])
    return df


def _with_filenames(df: pl.DataFrame) -> pl.DataFrame:
    """Add _filename (last path segment; a URL's host when its path is empty) and _title (default: stem)."""
    src, kind = pl.col("_source"), pl.col("_source_type")
    url_path = src.str.replace(r"[?#].*$", "").str.replace(r"^[^:/]+://[^/]*", "")
    last = pl.when(kind == "url").then(url_path).otherwise(src).str.split("/").list.last()
    host = src.str.extract(r"^[^:/]+://(?:[^@/?#]*@)?([^/?#]*)", 1)
    df = df.with_columns(
        pl.when((kind == "url") & ((last == "") | last.is_null()))
        .then(host)
        .otherwise(last)
        .alias("_filename")
    )
    encoded = df.select((pl.col("_source_type") == "url") & pl.col("_filename").str.contains("%")).to_series()
    df = df.with_columns(_patch(df["_filename"], encoded, unquote, df["_filename"]).alias("_filename"))
    stem = pl.col("_filename").str.replace(r"^(.+)\.[^.]*$", "${1}")
    return df.with_columns(pl.coalesce(pl.col("title"), stem).alias("_title"))


def _normalise_parent(
    df: pl.DataFrame, default_parent: str | None, errors: _Errors, parent_map: Mapping[str, str]
) -> pl.DataFrame:
    """Add _parent: the row's parent_id in normal form (ids.normal_id: any notation of spec convention 5 ->
    lowercase dashed UUID), mapped by parent_map (normal ids), else the default; null when invalid. Each
    distinct cell is converted once.
    """
    given = pl.col("parent_id").is_not_null()
    if default_parent is None:
        errors.add(
            df, ~given, "parent_id", "missing (no parent_id in the row and no --parent-id given)", pl.lit("")
        )
    normal: dict[str, str | None] = {}
    reasons: dict[str, str] = {}
    for value in df["parent_id"].drop_nulls().unique().to_list():
        try:
            normal[value] = parent_map.get(normal_id(value), normal_id(value))
        except ValueError as exc:
            normal[value] = None
            reasons[value] = str(exc)
    converted = pl.col("parent_id").replace_strict(normal, default=None, return_dtype=pl.String)
    if reasons:
        errors.add(
            df,
            pl.col("parent_id").is_in(list(reasons)),
            "parent_id",
            pl.col("parent_id").replace_strict(reasons, default="", return_dtype=pl.String),
            pl.col("_raw_parent_id"),
        )
    return df.with_columns(
        pl.when(given).then(converted).otherwise(pl.lit(default_parent, dtype=pl.String)).alias("_parent")
    )


def _with_keys(df: pl.DataFrame, errors: _Errors) -> pl.DataFrame:
    """Add _key (the row's key, else derive_key(source, parent)) and reject second and later duplicates."""
    derive = df.select(
        pl.col("key").is_null() & pl.col("_source").is_not_null() & pl.col("_parent").is_not_null()
    ).to_series()
    keys = _patch(df["key"], derive, derive_key, df["_source"], df["_parent"])
    df = df.with_columns(keys.alias("_key"), pl.col("key").is_not_null().alias("_key_given"))
    first = df.filter(pl.col("_key").is_not_null()).group_by("_key").agg(pl.col("row").min().alias("_first"))
    df = df.join(first, on="_key", how="left", maintain_order="left")
    first_at = pl.col("_first").cast(pl.String)
    errors.add(
        df,
        pl.col("_first").is_not_null() & (pl.col("row") != pl.col("_first")),
        "key",
        pl.when(pl.col("_key_given"))
        .then(pl.lit("duplicate key (first used at row ") + first_at + pl.lit(")"))
        .when(pl.col("_source_type") == "url")
        .then(
            pl.lit("duplicate source for the same parent_id (first at row ")
            + first_at
            + pl.lit("; a URL's query string is not part of its derived key); give each a distinct key")
        )
        .otherwise(
            pl.lit("duplicate source for the same parent_id (first at row ")
            + first_at
            + pl.lit("); give each a distinct key to upload it twice")
        ),
        pl.col("_key"),
    )
    return df


def _normalise_privacy(df: pl.DataFrame, errors: _Errors) -> pl.DataFrame:
    """Add _ptype and final _domains: domains alone mean custom; custom needs domains; others take none."""
    ptype = pl.col("privacy_type").str.to_lowercase()
    has_domains = pl.col("_domains").list.len().fill_null(0) > 0
    errors.add(
        df,
        pl.col("privacy_type").is_not_null() & ~ptype.is_in(PRIVACY_TYPES),
        "privacy_type",
        pl.lit("unknown privacy_type '")
        + pl.col("privacy_type").str.slice(0, 40)
        + pl.lit("' (expected anywhere, nowhere or custom)"),
        pl.col("_raw_privacy_type"),
    )
    domains_bad = pl.col("row").is_in(errors.rows_for("privacy_domains").implode())
    errors.add(
        df,
        (ptype == "custom") & ~has_domains & ~domains_bad,
        "privacy_domains",
        "required when privacy_type is custom",
        pl.col("_raw_privacy_domains"),
    )
    errors.add(
        df,
        ptype.is_in(["anywhere", "nowhere"]) & has_domains,
        "privacy_domains",
        pl.lit("only allowed with privacy_type custom (privacy_type is ") + ptype + pl.lit(")"),
        pl.col("_raw_privacy_domains"),
    )
    custom = (ptype == "custom") | (pl.col("privacy_type").is_null() & has_domains)
    return df.with_columns(
        pl.when(custom).then(pl.lit("custom")).otherwise(ptype).alias("_ptype"),
        pl.when(custom).then(pl.col("_domains")).otherwise(None).alias("_domains"),
    )


def _route(df: pl.DataFrame, option: str, errors: _Errors) -> pl.DataFrame:
    """Add _via: the path each source kind takes under the --via option; a kind that cannot is rejected."""
    vias: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for source_kind in SourceKind:
        try:
            vias[source_kind.value] = choose_via(source_kind, option).value
        except ValueError as exc:
            reasons[source_kind.value] = str(exc)
    kind = pl.col("_source_type")
    if reasons:
        errors.add(
            df,
            kind.is_in(list(reasons)),
            "source",
            kind.replace_strict(reasons, default="", return_dtype=pl.String),
            pl.col("_safe_source").fill_null(pl.col("_source")),
        )
    return df.with_columns(kind.replace_strict(vias, default=None, return_dtype=pl.String).alias("_via"))


def _patch(target: pl.Series, mask: pl.Series, fn: Callable[..., Any], *inputs: pl.Series) -> pl.Series:
    """``target`` with ``fn(a[i], b[i], ...)`` of the ``inputs`` written where ``mask`` is true (Python only
    on those rows, each input a plain list: no struct per row)."""
    idx = mask.fill_null(False).arg_true()
    if idx.len() == 0:
        return target
    columns = [series.gather(idx).to_list() for series in inputs]
    return target.clone().scatter(idx, [fn(*values) for values in zip(*columns, strict=True)])


def _parse_cells(
    rows: pl.Series, cells: pl.Series, parser: Callable[[str], Any]
) -> tuple[list[str | None], list[tuple[int, str, str]]]:
    """Parse the non-null cells of one column into canonical JSON text (cached per distinct cell).

    Returning text lets polars build the typed list column in one vectorised json_decode.
    """
    texts: list[str | None] = [None] * len(cells)
    bad: list[tuple[int, str, str]] = []
    if cells.null_count() == len(cells):
        return texts, bad
    cache: dict[str, tuple[str | None, str | None]] = {}
    for i, (row, text) in enumerate(zip(rows.to_list(), cells.to_list(), strict=True)):
        if text is None:
            continue
        hit = cache.get(text)
        if hit is None:
            try:
                hit = (json.dumps(parser(text)), None)
            except FieldError as exc:
                hit = (None, str(exc))
            cache[text] = hit
        if hit[1] is None:
            texts[i] = hit[0]
        else:
            bad.append((row, text, hit[1]))
    return texts, bad


def short(text: str) -> str:
    return text if len(text) <= VALUE_MAX else text[: VALUE_MAX - 1] + "…"


_FIELD_ORDER = {name: i for i, name in enumerate(("record", *INPUT_COLUMNS))}


def field_rank(name: str) -> int:
    return _FIELD_ORDER.get(name, len(_FIELD_ORDER))
