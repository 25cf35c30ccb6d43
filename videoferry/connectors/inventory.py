"""An inventory read and checked: its rows (inventory_load.py) normalised into item specs; --parent-map."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from videoferry.connectors.ids import normal_id
from videoferry.connectors.inventory_load import InventoryError, load, load_platform
from videoferry.connectors.inventory_normalise import (
    CHAPTER_DTYPE,
    INPUT_COLUMNS,
    OUTPUT_SCHEMA,
    empty_rows,
    field_rank,
    normalise,
)
from videoferry.connectors.inventory_sources import ListingSkips
from videoferry.connectors.path_filter import FilterError, PathFilter
from videoferry.connectors.platforms.listing import is_platform_source
from videoferry.connectors.platforms.origins import Origin
from videoferry.connectors.platforms.takeout import is_takeout_source
from videoferry.connectors.s3 import S3Config
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
    origins: Mapping[str, Origin] = field(default_factory=dict)

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
        loaded = load_platform(uri, folder_map, captions)
    else:
        loaded = load(uri, s3=s3, format=format, path_filter=path_filter)
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
