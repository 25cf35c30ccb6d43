"""Normalise inventory rows into the ledger's stored form (canonical JSON for lists) before planning."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from state.machine import PRIVACY_TYPES, VIAS

# Columns plan() writes from a row. "row" is informational and never counts as a change.
SPEC_FIELDS: tuple[str, ...] = (
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
# What the upload depends on: never changed while a video may exist for the item.
IDENTITY_FIELDS: tuple[str, ...] = ("source", "parent_id", "via")
# What the finish step can still apply to an existing video.
METADATA_FIELDS: tuple[str, ...] = tuple(f for f in SPEC_FIELDS if f not in IDENTITY_FIELDS)


class RowError(ValueError):
    """An inventory row the ledger cannot store; the message names the key or row number."""


def dump(value: Any) -> str:
    """Canonical JSON text (stable, compact, unicode kept) for list columns."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _text(value: Any) -> str | None:
    return None if _blank(value) else str(value)


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
    return value


def _string_list(value: Any, where: str, name: str, separators: str) -> str | None:
    if _blank(value):
        return None
    value = _maybe_json(value)
    if isinstance(value, str):
        parts = [value]
        for sep in separators:
            parts = [p for chunk in parts for p in chunk.split(sep)]
        items = [p.strip() for p in parts if p.strip()]
    elif isinstance(value, list | tuple):
        items = [str(v).strip() for v in value if not _blank(v) and str(v).strip()]
    else:
        raise RowError(f"{where}: {name} must be a list of strings")
    return dump(items) if items else None


def _chapters(value: Any, where: str) -> str | None:
    if _blank(value):
        return None
    value = _maybe_json(value)
    if not isinstance(value, list | tuple):
        raise RowError(f"{where}: chapters must be a list of {{time, title}}")
    out: list[dict[str, Any]] = []
    for entry in value:
        if isinstance(entry, Mapping):
            time, title = entry.get("time"), entry.get("title")
        elif isinstance(entry, list | tuple) and len(entry) == 2:
            time, title = entry
        else:
            raise RowError(f"{where}: each chapter needs a time and a title")
        try:
            seconds = float(time)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise RowError(f"{where}: chapter time {time!r} is not a number of seconds") from None
        if not math.isfinite(seconds) or seconds < 0:
            raise RowError(f"{where}: chapter time {time!r} must be zero or more seconds")
        out.append({"time": seconds, "title": "" if title is None else str(title)})
    return dump(out) if out else None


def _int(value: Any, where: str, name: str) -> int | None:
    if _blank(value):
        return None
    if isinstance(value, bool):
        raise RowError(f"{where}: {name} must be an integer")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise RowError(f"{where}: {name} must be an integer") from None
    if number != value and not isinstance(value, str):
        raise RowError(f"{where}: {name} must be an integer")
    if number < 0:
        raise RowError(f"{where}: {name} must not be negative")
    return number


def normalize(row: Mapping[str, Any]) -> dict[str, Any]:
    """The stored form of one inventory row (key, row and SPEC_FIELDS); extra columns are ignored."""
    number = row.get("row")
    where = f"row {number}" if not _blank(number) else "row"
    key = _text(row.get("key"))
    if key is None:
        raise RowError(f"{where}: key is missing")
    where = f"{where} (key {key!r})"
    source = _text(row.get("source"))
    if source is None:
        raise RowError(f"{where}: source is missing")
    via = _text(row.get("via"))
    if via is not None and via not in VIAS:
        raise RowError(f"{where}: via must be one of {', '.join(sorted(VIAS))}")
    privacy_type = _text(row.get("privacy_type"))
    if privacy_type is not None and privacy_type not in PRIVACY_TYPES:
        raise RowError(f"{where}: privacy_type must be one of {', '.join(sorted(PRIVACY_TYPES))}")
    try:
        return {
            "key": key,
            "row": _int(number, where, "row"),
            "source": source,
            "source_size": _int(row.get("source_size"), where, "source_size"),
            "title": None if row.get("title") is None else str(row.get("title")),
            "description": _text(row.get("description")),
            "parent_id": _text(row.get("parent_id")),
            "tags": _string_list(row.get("tags"), where, "tags", ";"),
            "chapters": _chapters(row.get("chapters"), where),
            "privacy_type": privacy_type,
            "privacy_domains": _string_list(row.get("privacy_domains"), where, "privacy_domains", ";,"),
            "via": via,
        }
    except json.JSONDecodeError as exc:
        raise RowError(f"{where}: a list column is not valid JSON ({exc.msg})") from None


#: The prefix of placeholder titles (connectors/titles.py; state/ imports nothing of connectors/).
PLACEHOLDER_PREFIX = "videoferry-pending-"


def meta_pending(values: Mapping[str, Any]) -> bool:
    """Whether the finish step owes this item metadata (stored form: JSON text lists, create_* columns)."""
    if (
        values.get("tags")
        or values.get("chapters")
        or values.get("privacy_type")
        or values.get("privacy_domains")
    ):
        return True
    create_title = values.get("create_title")
    if create_title is None:  # nothing created yet: title and description will travel with the create
        return False
    title = values.get("title")
    if title is not None and title != create_title:
        return True
    if title is None and create_title.startswith(PLACEHOLDER_PREFIX):  # a derived title sent as a placeholder
        return True
    description = values.get("description")
    return bool(description) and description != (values.get("create_description") or "")
