"""Operations rows: one row's cells checked once, per kind, into an OperationSpec or RowErrors."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from connectors.ids import normal_id
from connectors.inventory_normalise import short
from connectors.inventory_sources import SourceBase, parse_attachments, parse_source
from core.fields import (
    FieldError,
    parse_chapter_time,
    parse_chapters,
    parse_domains,
    parse_string_list,
    parse_tags,
)
from core.item import Chapter, PrivacyType, RowError, VideoStatus
from core.operation import (
    ALL_COLUMNS,
    COMMON_COLUMNS,
    KIND_COLUMNS,
    ONE_VIDEO_KINDS,
    AttachParams,
    ChaptersParams,
    ConcatParams,
    CopyParams,
    Crop,
    CutParams,
    DeleteParams,
    MoveParams,
    OperationSpec,
    OpKind,
    OpParams,
    ReplaceParams,
    Selector,
    Target,
    TargetKind,
    TrimRange,
    UpdateParams,
    derive_op_id,
    parse_time,
)
from core.operation_graph import reference_fields
from core.redact import scrub_urls

T = TypeVar("T")
#: Explicit operation ids (and op: references): they travel in ;-separated lists and in messages.
OP_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SELECT_CLAUSES = ("project", "folder", "title", "tag", "status", "created_after", "created_before")
_CLAUSE_RE = re.compile(r'\s*([A-Za-z_]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*?)\s*(?:;|$)')
_QUALITY_RE = re.compile(r"^[1-9][0-9]{2,3}p$")
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_CROP_FIELDS = ("w", "h", "x", "y", "quality")


class RowResult(NamedTuple):
    """What one row gave: its spec, or its errors (and its explicit id, so references to it can say so)."""

    spec: OperationSpec | None
    errors: list[RowError]
    id: str | None


# ---------------------------------------------------------------------------------------------- targets


def parse_selector(query: str) -> Selector:
    """``project=<id>;folder=<id>;title=Intro*;tag=a;tag=b;status=done,error;created_after=2026-01-01``.

    Values may be double-quoted (JSON string rules) to hold ``;``. Raises FieldError naming the clause.
    """
    values: dict[str, Any] = {"tags": [], "statuses": []}
    singles = {"project": "project_id", "folder": "folder_id", "title": "title"}
    singles |= {"created_after": "created_after", "created_before": "created_before"}
    pos, text = 0, query.strip()
    if not text:
        raise FieldError("empty selector: give at least one clause, e.g. select:project=<id>")
    while pos < len(text):
        match = _CLAUSE_RE.match(text, pos)
        if not match or match.end() == pos:
            raise FieldError(f"cannot read the clause at char {pos} (name=value, clauses split by ;)")
        pos = match.end()
        name, raw = match.group(1).lower(), match.group(2)
        try:
            value = json.loads(raw) if raw.startswith('"') else raw
        except json.JSONDecodeError:
            raise FieldError(f"clause {name}: the quoted value is not closed or not valid") from None
        if not isinstance(value, str) or not value:
            raise FieldError(f"clause {name} has no value")
        if name not in SELECT_CLAUSES:
            raise FieldError(f"unknown clause {name!r} (expected {', '.join(SELECT_CLAUSES)})")
        if name == "tag":
            values["tags"].append(value)
        elif name == "status":
            for status in value.split(","):
                try:
                    values["statuses"].append(VideoStatus(status.strip().lower()))
                except ValueError:
                    names = ", ".join(s.value for s in VideoStatus)
                    raise FieldError(f"unknown status {status.strip()!r} (expected {names})") from None
        elif singles[name] in values:
            raise FieldError(f"clause {name} is given twice")
        elif name in ("project", "folder"):
            try:
                values[singles[name]] = normal_id(value)
            except ValueError as exc:
                raise FieldError(f"{name}: {exc}") from None
        elif name.startswith("created_"):
            try:
                values[name] = parse_time(value)
            except ValueError:
                raise FieldError(
                    f"{name}: {value[:40]!r} is not a date or time (2026-01-31T12:00Z)"
                ) from None
        else:
            values[name] = value
    values["tags"] = tuple(dict.fromkeys(values["tags"]))
    values["statuses"] = tuple(dict.fromkeys(values["statuses"]))
    selector = Selector(**values)
    if selector.created_after and selector.created_before:
        if selector.created_after >= selector.created_before:
            raise FieldError("created_after is not before created_before: nothing can match")
    return selector


def parse_target(text: str) -> Target:
    """A target cell: a video id in any notation, ``key:<k>``, ``op:<id>`` or ``select:<query>``."""
    text = text.strip()
    prefix, sep, rest = text.partition(":")
    prefix = prefix.strip().lower()
    if sep and prefix in ("key", "op", "select"):
        rest = rest.strip()
        if not rest:
            raise FieldError(f"{prefix}: needs a value after the colon")
        if prefix == "select":
            selector = parse_selector(rest)
            return Target(TargetKind.SELECT, selector.text(), selector)
        if prefix == "op" and not OP_ID_RE.match(rest):
            raise FieldError(f"op:{rest[:40]} is not an operation id (letters, digits, . _ -; up to 128)")
        return Target(TargetKind(prefix), rest)
    try:
        return Target(TargetKind.VIDEO, normal_id(text))
    except ValueError as exc:
        raise FieldError(f"{exc}; or key:<k>, op:<id>, select:<query>") from None


def parse_target_list(text: str) -> tuple[Target, ...]:
    """prepend / append: a JSON list or ;-separated list of single-video targets (no selectors)."""
    targets: list[Target] = []
    for i, item in enumerate(parse_string_list(text), start=1):
        if item.lower().startswith("select:"):
            raise FieldError(f"item {i}: a selector has no order; name each video (id, key: or op:)")
        try:
            targets.append(parse_target(item))
        except FieldError as exc:
            raise FieldError(f"item {i}: {exc}") from None
    return tuple(targets)


# ---------------------------------------------------------------------------------------------- values


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FieldError(f"invalid JSON ({exc.msg} at char {exc.pos}); expected {what}") from None


def _seconds(item: Mapping[str, Any], name: str, where: str, *, positive: bool = False) -> float:
    value = item.get(name)
    if value is None:
        raise FieldError(f"{where} has no {name}")
    try:
        seconds = parse_chapter_time(value)
    except FieldError as exc:
        raise FieldError(f"{where} {name}: {str(exc).replace('time', 'value', 1)}") from None
    if positive and seconds <= 0:
        raise FieldError(f"{where} {name} must be more than 0 seconds")
    return seconds


def _trim_items(value: Any, what: str) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise FieldError(f"range {i} is not an object {what}")
        unknown = sorted(set(item) - {"start", "length"})
        if unknown:
            raise FieldError(f"range {i} has unknown field {unknown[0]!r} (start, length)")
    return items


def parse_cut_trim(text: str) -> tuple[TrimRange, ...]:
    """cut trim: a JSON list of {start, length} (seconds, or 1:30); ranges may not overlap."""
    items = _trim_items(_json(text, "a list of {start, length}"), "{start, length}")
    if not items:
        raise FieldError("empty trim: give at least one {start, length}")
    ranges = [
        TrimRange(_seconds(it, "start", f"range {i}"), _seconds(it, "length", f"range {i}", positive=True))
        for i, it in enumerate(items, start=1)
    ]
    ordered = sorted(range(len(ranges)), key=lambda i: ranges[i].start)
    for a, b in zip(ordered, ordered[1:], strict=False):
        if ranges[a].start + (ranges[a].length or 0) > ranges[b].start:
            raise FieldError(f"ranges {min(a, b) + 1} and {max(a, b) + 1} overlap")
    return tuple(ranges)


def parse_replace_trim(text: str) -> TrimRange:
    """replace trim (X-Video-Trim): one {start, length}; without length, from start to the end."""
    items = _trim_items(_json(text, "{start, length}"), "{start, length}")
    if len(items) != 1:
        raise FieldError("a replace takes one {start, length} (the upload's X-Video-Trim)")
    length = (
        _seconds(items[0], "length", "trim", positive=True) if items[0].get("length") is not None else None
    )
    return TrimRange(_seconds(items[0], "start", "trim"), length)


def parse_crop(text: str) -> Crop:
    """crop: {w, h, x, y, quality}: w and h above 0, x and y from 0 (default 0), quality like 720p."""
    value = _json(text, "{w, h, x, y, quality}")
    if not isinstance(value, dict):
        raise FieldError("expected an object {w, h, x, y, quality}")
    unknown = sorted(set(value) - set(_CROP_FIELDS))
    if unknown:
        raise FieldError(f"unknown crop field {unknown[0]!r} (w, h, x, y, quality)")
    numbers: dict[str, float] = {}
    for name in ("w", "h", "x", "y"):
        number = value.get(name, None if name in ("w", "h") else 0)
        if number is None:
            raise FieldError(f"crop has no {name}")
        if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number):
            raise FieldError(f"crop {name} must be a number, not {json.dumps(number)[:40]}")
        if number < 0 or (name in ("w", "h") and number == 0):
            raise FieldError(f"crop {name} must be {'more than 0' if name in ('w', 'h') else '0 or more'}")
        numbers[name] = float(number)
    quality = value.get("quality")
    if quality is not None and (not isinstance(quality, str) or not _QUALITY_RE.match(quality.lower())):
        raise FieldError(f"crop quality {json.dumps(quality)[:40]} is not a quality like 360p or 1080p")
    return Crop(quality=quality.lower() if quality else None, **numbers)


def parse_bool(text: str) -> bool:
    """true/false, yes/no, 1/0 (any case)."""
    try:
        return _BOOLS[text.strip().lower()]
    except KeyError:
        raise FieldError(f"{text[:40]!r} is not true or false") from None


def parse_privacy(text: str) -> PrivacyType:
    """anywhere, nowhere or custom (any case)."""
    try:
        return PrivacyType(text.strip().lower())
    except ValueError:
        raise FieldError(
            f"unknown privacy_type {text[:40]!r} (expected anywhere, nowhere or custom)"
        ) from None


def parse_id(text: str) -> str:
    """A project or folder id in any notation, normalised."""
    try:
        return normal_id(text)
    except ValueError as exc:
        raise FieldError(str(exc)) from None


# ---------------------------------------------------------------------------------------------- rows


class _Row:
    """One row's cells and the errors found in them."""

    def __init__(self, row: int | None, cells: Mapping[str, str | None]) -> None:
        self.row, self.cells, self.errors = row, cells, list[RowError]()

    def text(self, col: str) -> str | None:
        value = self.cells.get(col)
        return value.strip() if value is not None and value.strip() else None

    def bad(self, col: str, reason: str, value: str | None = None) -> None:
        shown = value if value is not None else (self.text(col) or "")
        self.errors.append(RowError(self.row, col, short(scrub_urls(shown)), scrub_urls(reason)))

    def failed(self, *cols: str) -> bool:
        return any(e.field in cols for e in self.errors)

    def parse(self, col: str, parser: Callable[[str], T]) -> T | None:
        text = self.text(col)
        if text is None:
            return None
        try:
            return parser(text)
        except (FieldError, ValueError) as exc:
            self.bad(col, str(exc))
            return None


def _update(r: _Row) -> OpParams:
    description = r.cells.get("description")
    tags = r.parse("tags", parse_tags)
    privacy = r.parse("privacy_type", parse_privacy)
    domains = r.parse("privacy_domains", parse_domains)
    if privacy is None and domains and r.text("privacy_type") is None:
        privacy = PrivacyType.CUSTOM
    if privacy is PrivacyType.CUSTOM and not domains and not r.failed("privacy_domains"):
        r.bad("privacy_domains", "required when privacy_type is custom")
    elif privacy in (PrivacyType.ANYWHERE, PrivacyType.NOWHERE) and domains:
        r.bad("privacy_domains", "only allowed with privacy_type custom")
    params = UpdateParams(
        title=r.text("title"),
        description=description if description and description.strip() else None,
        tags=tuple(tags) if tags is not None else None,
        privacy_type=privacy,
        privacy_domains=tuple(domains) if domains is not None else None,
    )
    if params == UpdateParams() and not any(r.text(c) for c in KIND_COLUMNS[OpKind.UPDATE]):
        r.bad("op", "an update needs title, description, tags, privacy_type or privacy_domains", "update")
    return params


def _chapters(r: _Row) -> OpParams:
    if r.text("chapters") is None:
        r.bad("chapters", "required: a JSON list of {time, title} ([] clears the chapters)")
    items = r.parse("chapters", parse_chapters) or []
    return ChaptersParams(tuple(Chapter(c["time"], c["title"]) for c in items))


def _move(r: _Row) -> OpParams:
    if r.text("project_id") is None:
        r.bad("project_id", "required: the project to move the video to")
    return MoveParams(r.parse("project_id", parse_id) or "", r.parse("folder_id", parse_id))


def _cut(r: _Row) -> OpParams:
    if r.text("trim") is None and r.text("crop") is None:
        r.bad("trim", "a cut needs trim, crop or both")
    description = r.cells.get("description")
    return CutParams(
        trim=r.parse("trim", parse_cut_trim) or (),
        crop=r.parse("crop", parse_crop),
        project_id=r.parse("project_id", parse_id),
        folder_id=r.parse("folder_id", parse_id),
        title=r.text("title"),
        description=description if description and description.strip() else None,
    )


def _concat(r: _Row) -> OpParams:
    prepend = r.parse("prepend", parse_target_list) or ()
    append = r.parse("append", parse_target_list) or ()
    if not prepend and not append and not r.failed("prepend", "append"):
        r.bad("prepend", "a concat needs videos to prepend, append or both")
    return ConcatParams(prepend, append, bool(r.parse("replace", parse_bool)))


def _replace(r: _Row, base: SourceBase) -> OpParams:
    value = r.text("source")
    source = ""
    if value is None:
        r.bad("source", "required: a local path, file://, s3://bucket/key or http(s) URL")
    else:
        canonical, _, error, safe = parse_source(value, base)
        if error or canonical is None:
            r.bad("source", error or "unreadable source", safe)
        else:
            source = canonical
    return ReplaceParams(source, r.parse("trim", parse_replace_trim))


def _attach(r: _Row, base: SourceBase) -> OpParams:
    if r.text("attachments") is None:
        r.bad("attachments", "required: local paths or s3:// URIs (a JSON list, or joined by |)")
    sources = r.parse("attachments", lambda text: parse_attachments(text, base)) or ()
    return AttachParams(sources, r.parse("additional_materials_enabled", parse_bool))


_PARAMS: dict[OpKind, Callable[[_Row, SourceBase], OpParams]] = {
    OpKind.UPDATE: lambda r, _: _update(r),
    OpKind.CHAPTERS: lambda r, _: _chapters(r),
    OpKind.COPY: lambda r, _: CopyParams(r.parse("parent_id", parse_id)),
    OpKind.MOVE: lambda r, _: _move(r),
    OpKind.CUT: lambda r, _: _cut(r),
    OpKind.CONCAT: lambda r, _: _concat(r),
    OpKind.REPLACE: _replace,
    OpKind.ATTACH: _attach,
    OpKind.DELETE: lambda r, _: DeleteParams(),
}


def parse_row(row: int | None, cells: Mapping[str, str | None], base: SourceBase) -> RowResult:
    """Check one row (cells: column -> text, None or blank = not given); every problem is reported."""
    r = _Row(row, cells)
    kind = target = None
    op = r.text("op")
    if op is None:
        r.bad("op", "missing (expected " + ", ".join(k.value for k in OpKind) + ")")
    else:
        try:
            kind = OpKind(op.lower())
        except ValueError:
            r.bad("op", f"unknown op {op[:40]!r} (expected {', '.join(k.value for k in OpKind)})")
    given_id = r.text("id")
    if given_id is not None and not OP_ID_RE.match(given_id):
        r.bad("id", "not an operation id (a letter or digit, then letters, digits, . _ -; up to 128)")
        given_id = None
    if r.text("target") is None:
        r.bad("target", "missing: a video id, key:<k>, op:<id> or select:<query>")
    else:
        target = r.parse("target", parse_target)
    if kind is None:
        return RowResult(None, r.errors, given_id)
    if target is not None and target.kind is TargetKind.SELECT and kind in ONE_VIDEO_KINDS:
        r.bad("target", f"a {kind.value} needs one video, not a selector")
    for col in ALL_COLUMNS:
        if col not in COMMON_COLUMNS and col not in KIND_COLUMNS[kind] and r.text(col) is not None:
            takes = ", ".join(KIND_COLUMNS[kind]) or "no parameters"
            r.bad(col, f"not a parameter of {kind.value} (it takes {takes})")
    params = _PARAMS[kind](r, base)
    if r.errors or target is None:
        return RowResult(None, r.errors, given_id)
    spec = OperationSpec(
        id=given_id or derive_op_id(kind, target, params),
        row=row,
        kind=kind,
        target=target,
        params=params,
        id_derived=given_id is None,
    )
    refs = tuple(dict.fromkeys(t for _, t in reference_fields(spec)))
    return RowResult(dataclasses.replace(spec, refs=refs), [], given_id)
