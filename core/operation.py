"""The operation model: kinds, targets, selectors, per-kind parameters, derived ids, the reference graph."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple

from core.item import Chapter, PrivacyType, VideoStatus


class OpKind(StrEnum):
    """What an operation does to its target video (spec 4.1, 4.2)."""

    UPDATE = "update"
    CHAPTERS = "chapters"
    COPY = "copy"
    MOVE = "move"
    CUT = "cut"
    CONCAT = "concat"
    REPLACE = "replace"
    ATTACH = "attach"
    DELETE = "delete"


#: The columns every row may have, then each kind's parameter columns (a non-empty other column is refused).
COMMON_COLUMNS: tuple[str, ...] = ("op", "id", "target")
KIND_COLUMNS: Mapping[OpKind, tuple[str, ...]] = {
    OpKind.UPDATE: ("title", "description", "tags", "privacy_type", "privacy_domains"),
    OpKind.CHAPTERS: ("chapters",),
    OpKind.COPY: ("parent_id",),
    OpKind.MOVE: ("project_id", "folder_id"),
    OpKind.CUT: ("trim", "crop", "project_id", "folder_id", "title", "description"),
    OpKind.CONCAT: ("prepend", "append", "replace"),
    OpKind.REPLACE: ("source", "trim"),
    OpKind.ATTACH: ("attachments", "additional_materials_enabled"),
    OpKind.DELETE: (),
}
ALL_COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys([*COMMON_COLUMNS, *(c for cols in KIND_COLUMNS.values() for c in cols)])
)
#: Kinds whose target must name exactly one video.
ONE_VIDEO_KINDS: frozenset[OpKind] = frozenset({OpKind.REPLACE})


# ---------------------------------------------------------------------------------------------- selectors


@dataclass(frozen=True)
class Selector:
    """A query over the library, expanded at plan time by listing: every clause must match."""

    project_id: str | None = None
    folder_id: str | None = None
    title: str | None = None  # exact, or a glob when it has * ? or [
    tags: tuple[str, ...] = ()  # the video has every one
    statuses: tuple[VideoStatus, ...] = ()  # any one of them
    created_after: datetime | None = None  # strictly after (UTC)
    created_before: datetime | None = None  # strictly before (UTC)

    @property
    def title_is_glob(self) -> bool:
        """Whether ``title`` is a pattern (matched here) rather than an exact title (a listing filter)."""
        return self.title is not None and any(c in self.title for c in "*?[")

    def matches(self, video: Mapping[str, Any]) -> bool:
        """Whether a listed video (title, tags, status, created_at) passes the clauses the listing cannot.

        project_id and folder_id are the listing's filters and are not checked here.
        """
        if self.title is not None:
            title = str(video.get("title") or "")
            if not (fnmatch.fnmatchcase(title, self.title) if self.title_is_glob else title == self.title):
                return False
        if self.tags and not set(self.tags) <= set(video.get("tags") or ()):
            return False
        if self.statuses and video.get("status") not in self.statuses:
            return False
        if self.created_after or self.created_before:
            created = video.get("created_at")
            if isinstance(created, str):
                try:
                    created = parse_time(created)
                except ValueError:
                    return False
            if not isinstance(created, datetime):
                return False
            created = created if created.tzinfo else created.replace(tzinfo=UTC)
            if self.created_after and not created > self.created_after:
                return False
            if self.created_before and not created < self.created_before:
                return False
        return True

    def text(self) -> str:
        """The canonical query text (clauses in a fixed order, quoted where needed)."""
        parts: list[tuple[str, str]] = [
            *((k, v) for k, v in (("project", self.project_id), ("folder", self.folder_id)) if v),
            *((("title", self.title),) if self.title is not None else ()),
            *(("tag", t) for t in self.tags),
            *(("status", s.value) for s in self.statuses),
            *(("created_after", _iso(self.created_after)),) * (self.created_after is not None),
            *(("created_before", _iso(self.created_before)),) * (self.created_before is not None),
        ]
        return ";".join(f"{k}={_quote(v)}" for k, v in parts)


def parse_time(text: str) -> datetime:
    """An ISO date or time as a selector or an answer writes it; a date is midnight, naive is UTC."""
    moment = datetime.fromisoformat(text.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _iso(moment: datetime | None) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else ""


def _quote(value: str) -> str:
    return json.dumps(value) if re.search(r'[;"]|^\s|\s$', value) else value


# ---------------------------------------------------------------------------------------------- targets


class TargetKind(StrEnum):
    """How a target names its video(s)."""

    VIDEO = "video"  # an id, normalised
    KEY = "key"  # the video a migrate run made for an inventory key (the ledger knows it)
    OP = "op"  # the video an earlier operation in the file made or changed
    SELECT = "select"  # every video a query finds at plan time


@dataclass(frozen=True)
class Target:
    """One operation target: ``<video id>``, ``key:<k>``, ``op:<id>`` or ``select:<query>``."""

    kind: TargetKind
    value: str  # the normal id, the key, the operation id, or the canonical query
    selector: Selector | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.value if self.kind is TargetKind.VIDEO else f"{self.kind.value}:{self.value}"

    @property
    def is_reference(self) -> bool:
        """Whether the target waits for something else (an operation, or a migrated item)."""
        return self.kind in (TargetKind.KEY, TargetKind.OP)


# ---------------------------------------------------------------------------------------------- parameters


class TrimRange(NamedTuple):
    """One range of a trim, in seconds; length None (replace only) means to the end."""

    start: float
    length: float | None


@dataclass(frozen=True)
class Crop:
    """The crop rectangle of a cut: width, height, left-top corner, output quality."""

    w: float
    h: float
    x: float = 0.0
    y: float = 0.0
    quality: str | None = None


@dataclass(frozen=True)
class UpdateParams:
    """update: only the given fields change (None = not given; an empty tuple clears tags)."""

    title: str | None = None
    description: str | None = None
    tags: tuple[str, ...] | None = None
    privacy_type: PrivacyType | None = None
    privacy_domains: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ChaptersParams:
    """chapters: the full new set (times in seconds); empty clears."""

    items: tuple[Chapter, ...] = ()


@dataclass(frozen=True)
class CopyParams:
    """copy: the destination project or folder (None: the source's own place)."""

    parent_id: str | None = None


@dataclass(frozen=True)
class MoveParams:
    """move: the new project, and folder."""

    project_id: str
    folder_id: str | None = None


@dataclass(frozen=True)
class CutParams:
    """cut: trim ranges and/or a crop, and where/what the result is."""

    trim: tuple[TrimRange, ...] = ()
    crop: Crop | None = None
    project_id: str | None = None
    folder_id: str | None = None
    title: str | None = None
    description: str | None = None

    @property
    def kept_seconds(self) -> float | None:
        """Seconds a trim keeps (the sum of its lengths), None without a trim."""
        return sum(r.length or 0.0 for r in self.trim) if self.trim else None


@dataclass(frozen=True)
class ConcatParams:
    """concat: videos joined before and after the target, and the service's replace flag."""

    prepend: tuple[Target, ...] = ()
    append: tuple[Target, ...] = ()
    replace: bool = False


@dataclass(frozen=True)
class ReplaceParams:
    """replace: new bytes for the target (X-Replace-Video-ID) from a source, with an optional trim."""

    source: str = field(repr=False)  # may be a signed URL: a secret
    trim: TrimRange | None = None


@dataclass(frozen=True)
class AttachParams:
    """attach: files (local paths or s3://) made additional materials of the target, each once; and the
    video's additional_materials_enabled when given."""

    sources: tuple[str, ...] = ()
    enable: bool | None = None


@dataclass(frozen=True)
class DeleteParams:
    """delete: no parameters."""


_EditParams = UpdateParams | ChaptersParams | CopyParams | MoveParams
#: The parameters of one operation: one class per kind.
OpParams = _EditParams | CutParams | ConcatParams | ReplaceParams | AttachParams | DeleteParams


@dataclass(frozen=True)
class OperationSpec:
    """One valid operations row: validated once, at read time."""

    id: str
    row: int | None
    kind: OpKind
    target: Target
    params: OpParams
    refs: tuple[Target, ...] = ()  # the op:/key: targets it waits for: target, prepend, append (deduplicated)
    id_derived: bool = False


def derive_op_id(kind: OpKind, target: Target, params: OpParams) -> str:
    """The default operation id: 32 hex of sha256 over the normalised content (stable across formats/runs).

    A replace source counts without a URL's query string and fragment (signatures change between runs).
    """
    content = json.dumps([kind.value, str(target), _canonical(params)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(content.encode()).hexdigest()[:32]


def _canonical(value: Any) -> Any:
    if isinstance(value, Target):
        return str(value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, ReplaceParams):
        source = value.source
        if re.match(r"^https?://", source, re.IGNORECASE):
            source = re.split(r"[?#]", source, maxsplit=1)[0]
        return {"source": source, "trim": _canonical(value.trim)}
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_canonical(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)  # 10 and 10.0 seconds are the same operation
    return value
