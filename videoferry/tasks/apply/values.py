"""What an apply operation leaves on its video, recorded with its intent: the values `check` explains a
difference with (tasks/check/explain.py reads them back)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from videoferry.core.operation import (
    ChaptersParams,
    CutParams,
    MoveParams,
    OperationSpec,
    ReplaceParams,
    UpdateParams,
)

#: The key of an apply intent's params that holds what the call sets (values_of's form).
SETS = "sets"
#: The value of a field whose new content cannot be known before the call (new bytes: size, md5, duration).
CHANGED = True


def _parent(project_id: str | None, folder_id: str | None) -> dict[str, Any] | None:
    return {"project_id": project_id, "folder_id": folder_id} if project_id or folder_id else None


def values_of(spec: OperationSpec) -> dict[str, Any]:
    """What the operation sets on its target video, by check's field names: title, description, tags,
    privacy_type, privacy_domains, chapters ([[milliseconds, title], ...]), parent ({project_id,
    folder_id}), bytes (CHANGED: a trim, crop or replace). Empty for the kinds that set none of them (copy,
    concat and delete act on other videos, or remove this one; attach adds materials). No source: a replace
    records that its bytes changed, never from where."""
    params = spec.params
    sets: dict[str, Any] = {}
    if isinstance(params, UpdateParams):
        given = {
            "title": params.title,
            "description": params.description,
            "tags": list(params.tags) if params.tags is not None else None,
            "privacy_type": params.privacy_type.value if params.privacy_type is not None else None,
            "privacy_domains": list(params.privacy_domains) if params.privacy_domains is not None else None,
        }
        sets = {k: v for k, v in given.items() if v is not None}
    elif isinstance(params, ChaptersParams):
        sets = {"chapters": [[round(c.time * 1000), c.title] for c in params.items]}
    elif isinstance(params, MoveParams):
        sets = {"parent": _parent(params.project_id, params.folder_id)}
    elif isinstance(params, CutParams):
        given = {"title": params.title, "description": params.description}
        sets = {k: v for k, v in given.items() if v is not None}
        if params.trim or params.crop is not None:
            sets["bytes"] = CHANGED
        if (parent := _parent(params.project_id, params.folder_id)) is not None:
            sets["parent"] = parent
    elif isinstance(params, ReplaceParams):
        sets = {"bytes": CHANGED}
    return sets


def recorded(params: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What an apply intent's params say its call set (None: recorded before values were kept)."""
    value = params.get(SETS)
    return value if isinstance(value, Mapping) else None
