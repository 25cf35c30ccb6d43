"""The stored form of an ItemSpec: its items columns (lists as canonical JSON text) and the way back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.item import ItemSpec, Via, default_title, item_spec, owes_metadata

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
    "via",
)


#: One encoder for every dump (json.dumps would build one per call with these options).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def dump(value: Any) -> str:
    """Canonical JSON text (stable, compact, unicode kept): list columns, params, results, summaries."""
    return _ENCODER.encode(value)


def _load(value: str | None) -> Any:
    return json.loads(value) if value else None


def spec_columns(spec: ItemSpec) -> dict[str, Any]:
    """key, row and SPEC_COLUMNS as stored: empty text and empty lists are NULL, lists canonical JSON."""
    return {
        "key": spec.key,
        "row": spec.row,
        "source": spec.source,
        "source_size": spec.source_size,
        "title": spec.title,
        "description": spec.description or None,
        "parent_id": spec.parent_id or None,
        "tags": dump(list(spec.tags)) if spec.tags else None,
        "chapters": dump([{"time": float(c.time), "title": c.title} for c in spec.chapters])
        if spec.chapters
        else None,
        "privacy_type": spec.privacy_type.value if spec.privacy_type else None,
        "privacy_domains": dump(list(spec.privacy_domains)) if spec.privacy_domains else None,
        "via": spec.via.value,
    }


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
    )


def meta_pending(row: Mapping[str, Any]) -> int:
    """1 when the finish step owes the item of this stored row anything (core.item.owes_metadata), else 0."""
    return int(owes_metadata(spec_from_row(row), row["create_title"], row["create_description"]))
