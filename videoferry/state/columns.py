"""The stored form of an ItemSpec: its items columns (lists as canonical JSON text) and the way back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from videoferry.core.item import ItemSpec, PrivacyType, Via, default_title, item_spec, owes_metadata

#: The items columns an ItemSpec fills (besides key and row), in report order. "row" never counts as a change.
SPEC_COLUMNS: tuple[str, ...] = (
    "source",
    "source_size",
    "title",
    "description",
    "parent_id",
    "tags",
    "chapters",
    "privacy_type",
    "privacy_domains",
    "attachments",
    "via",
)


#: One encoder for every dump (json.dumps would build one per call with these options).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def dump(value: Any) -> str:
    """Canonical JSON text (stable, compact, unicode kept): list columns, params, results, summaries."""
    return _ENCODER.encode(value)


def _load(value: str | None) -> Any:
    return json.loads(value) if value else None


#: The names of spec_values(), in order: key, row, then SPEC_COLUMNS.
SPEC_VALUE_NAMES: tuple[str, ...] = ("key", "row", *SPEC_COLUMNS)


def spec_values(spec: ItemSpec, texts: dict[tuple[Any, ...], str] | None = None) -> tuple[Any, ...]:
    """key, row and SPEC_COLUMNS as stored, in SPEC_VALUE_NAMES order: empty text and empty lists are NULL,
    lists canonical JSON. ``texts`` (list value -> its JSON, filled as met; give one dict to many calls)
    saves encoding a list again when many rows share it, as an inventory's tags often do.
    """
    tags, chapters, domains, attachments = spec.tags, spec.chapters, spec.privacy_domains, spec.attachments
    cache = {} if texts is None else texts
    return (
        spec.key,
        spec.row,
        spec.source,
        spec.source_size,
        spec.title,
        spec.description or None,
        spec.parent_id or None,
        _list_text(cache, tags) if tags else None,
        _list_text(cache, chapters, _CHAPTERS) if chapters else None,
        _TEXT.get(spec.privacy_type) or spec.privacy_type.value if spec.privacy_type else None,
        _list_text(cache, domains) if domains else None,
        dump(list(attachments)) if attachments else None,
        _TEXT.get(spec.via) or spec.via.value,
    )


#: The stored text of each Via and PrivacyType (a look-up, cheaper than .value once per row).
_TEXT: dict[object, str] = {member: member.value for member in (*Via, *PrivacyType)}


_CHAPTERS = "chapters"  # the cache key's first part for chapters (tags and domains: None; same text per list)


def _list_text(cache: dict[tuple[Any, ...], str], values: Any, kind: str | None = None) -> str:
    """The stored JSON text of a non-empty list column (chapters as {time, title} objects), cached."""
    key = (kind, values)
    try:
        text = cache.get(key)
    except TypeError:  # a list, not a tuple: not hashable, not cached
        text, key = None, (kind, ())
    if text is None:
        if kind == _CHAPTERS:
            text = dump([{"time": float(c.time), "title": c.title} for c in values])
        else:
            text = dump(list(values))
        if key[1]:
            cache[key] = text
    return text


def spec_columns(spec: ItemSpec) -> dict[str, Any]:
    """key, row and SPEC_COLUMNS as stored (spec_values by name)."""
    return dict(zip(SPEC_VALUE_NAMES, spec_values(spec), strict=True))


def spec_from_row(row: Mapping[str, Any]) -> ItemSpec:
    """The ItemSpec of a stored items row. Older ledgers: NULL title -> the derived title, NULL via -> tus."""
    source, key = row["source"], row["key"]
    return item_spec(
        key=key,
        source=source,
        parent_id=row["parent_id"] or "",
        via=row["via"] or Via.TUS,
        title=row["title"] if row["title"] is not None else default_title(source, key),
        row=row["row"],
        source_size=row["source_size"],
        description=row["description"],
        tags=_load(row["tags"]),
        chapters=_load(row["chapters"]),
        privacy_type=row["privacy_type"],
        privacy_domains=_load(row["privacy_domains"]),
        attachments=_load(row.get("attachments")),
    )


def meta_pending(row: Mapping[str, Any]) -> int:
    """1 when the finish step owes the item of this stored row anything (core.item.owes_metadata), else 0."""
    return int(owes_metadata(spec_from_row(row), row["create_title"], row["create_description"]))
