"""The planning half of `videoferry apply`: an operations file resolved against the ledger and the library.

`resolve_plan` reads nothing but the ledger and the service's video list (GET only, one call per 100 videos
per distinct listing) and writes nowhere: it is what `apply --dry-run` prints, and what the runner will
store as ledger operations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from videoferry.connectors.errors import AuthError, VideoApiError
from videoferry.connectors.ids import same_id
from videoferry.connectors.models import Video
from videoferry.core.item import COMPLETE_STATES, RowError
from videoferry.core.operation import (
    AttachParams,
    ChaptersParams,
    ConcatParams,
    CopyParams,
    CutParams,
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
)
from videoferry.core.redact import safe_uri
from videoferry.state.machine import UnitState
from videoferry.tasks.apply.durations import Durations, needs_duration, past_the_end
from videoferry.tasks.sessions import material_name

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient
    from videoferry.connectors.operations import Operations
    from videoferry.state.models import Item
    from videoferry.state.reader import LedgerReader

__all__ = ["ApplyPlan", "PlannedOp", "Refusal", "describe_params", "resolve_plan"]

#: How many ids a line shows before "and N more".
SHOWN_IDS = 5


@dataclass(frozen=True)
class PlannedOp:
    """One operation that would run: on which videos, with what, after what."""

    row: int | None
    op_id: str
    kind: OpKind
    target: str  # the target as the file names it (canonical)
    video_ids: tuple[str, ...]  # the videos it acts on, resolved now (empty when the target is op:)
    reference: str | None  # "op:<id> (row N)": the video is known only when that operation has run
    params: str  # the parameters in short ("" for delete)
    waits_for: tuple[str, ...]  # "op:<id> (row N)", "key:<k> (item <state>)"

    def line(self) -> str:
        """The dry run's line for this operation."""
        text = f"row {self.row}: {self.kind.value} {self.op_id} on {self.videos_text()}"
        if self.params:
            text += f": {self.params}"
        if self.waits_for:
            text += "; waits for " + ", ".join(self.waits_for)
        return text

    def videos_text(self) -> str:
        if self.reference is not None:
            return f"the video of {self.reference}"
        ids = _ids_text(self.video_ids)
        if self.target.startswith(("select:", "key:")):
            count = len(self.video_ids)
            return f"{count} video{'s' * (count != 1)} [{ids}] ({self.target})"
        return f"video {ids}"


@dataclass(frozen=True)
class Refusal:
    """One row that will not run: row, field, value, why; a warning (a selector matching nothing) or not."""

    row: int | None
    field: str
    value: str
    reason: str
    warning: bool = False

    def line(self) -> str:
        """The dry run's line for this row."""
        word = "skipped" if self.warning else "refused"
        return f"{word} row {self.row}, field {self.field}: {self.reason}"


@dataclass
class ApplyPlan:
    """What an operations file would do: operations in run order, refused rows, file warnings."""

    uri: str
    #: The valid operations by id (what the runner executes; the dry run only prints `planned`).
    specs: dict[str, OperationSpec] = field(default_factory=dict)
    planned: list[PlannedOp] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Refusal]:
        """The refused rows that are errors (not warnings)."""
        return [r for r in self.refused if not r.warning]

    @property
    def delete_ops(self) -> list[PlannedOp]:
        return [p for p in self.planned if p.kind is OpKind.DELETE]

    @property
    def delete_videos(self) -> int:
        """How many videos the delete rows would delete (an op: target counts as one)."""
        return sum(len(p.video_ids) or (1 if p.reference else 0) for p in self.delete_ops)

    @property
    def video_count(self) -> int:
        """Distinct videos known now that some operation acts on."""
        return len({v for p in self.planned for v in p.video_ids})

    @property
    def exit_code(self) -> int:
        """0 when no row is refused as an error, 1 otherwise."""
        return 1 if self.errors else 0

    def summary(self, *, allow_delete: bool = False) -> str:
        """The dry run's summary line."""
        n, errors = len(self.planned), len(self.errors)
        skipped = len(self.refused) - errors
        text = (
            f"dry run: {n} operation{'s' * (n != 1)} planned on {self.video_count} known "
            f"video{'s' * (self.video_count != 1)}, {errors} row{'s' * (errors != 1)} refused"
        )
        if skipped:
            text += f", {skipped} skipped (nothing to act on)"
        deletes = self.delete_ops
        if deletes:
            count = self.delete_videos
            rows = f"{len(deletes)} delete row{'s' * (len(deletes) != 1)}"
            videos = f"{count} video{'s' * (count != 1)}"
            text += (
                f"; {rows} would delete {videos}"
                if allow_delete
                else f"; {rows} ({videos}) would be refused without --allow-delete"
            )
        return text

    def lines(self, *, allow_delete: bool = False) -> list[str]:
        """Every line of the dry run: warnings, one per operation, one per refused row, the summary."""
        return [
            *(f"warning: {w}" for w in self.warnings),
            *(p.line() for p in self.planned),
            *(r.line() for r in self.refused),
            self.summary(allow_delete=allow_delete),
        ]


def resolve_plan(ops: Operations, ledger: LedgerReader | None, client: VideoClient) -> ApplyPlan:
    """Resolve every target of the file: key: from the ledger, select: by listing, op: left as a reference.

    Only GET calls (the video list); nothing is written to the service or the ledger. AuthError from the
    service propagates (configuration to fix); another listing failure refuses the rows of that selector.
    """
    items = {item.spec.key: item for item in ledger.items()} if ledger is not None else {}
    video_of = {k: item.video_id for k, item in items.items() if item.video_id}
    ordered, refused = ops.plan(set(video_of))
    plan = ApplyPlan(uri=ops.uri, specs={s.id: s for s in ordered}, warnings=list(ops.warnings))
    plan.refused = [_refusal(e, items, ledger is not None) for e in refused]
    rows = {s.id: s.row for s in ordered}
    listings: dict[tuple[str | None, str | None, str | None], list[Video] | VideoApiError] = {}
    skipped: dict[str, str] = {}  # op id -> why it acts on nothing (its dependants act on nothing too)
    durations = Durations(client)
    # Operations an earlier run already called are not checked again: a cut in place changed the duration.
    called = (
        {u.op_id for u in ledger.units() if u.state != UnitState.PLANNED} if ledger is not None else set()
    )

    def ref_text(ref: Target) -> str:
        if ref.kind is TargetKind.OP:
            return f"{ref} (row {rows.get(ref.value)})"
        item = items.get(ref.value)
        return f"{ref} (item {item.state if item else 'unknown'})"

    for spec in ordered:
        quiet = next(((name, ref) for name, ref in _op_refs(spec) if ref.value in skipped), None)
        if quiet is not None:
            reason = f"waits for {ref_text(quiet[1])}, which acts on no video"
            plan.refused.append(Refusal(spec.row, quiet[0], str(quiet[1]), reason, warning=True))
            skipped[spec.id] = reason
            continue
        target = spec.target
        ids: tuple[str, ...] = ()
        reference = None
        if target.kind is TargetKind.VIDEO:
            ids = (target.value,)
        elif target.kind is TargetKind.KEY:
            ids = (video_of[target.value],)
        elif target.kind is TargetKind.OP:
            reference = ref_text(target)
        else:
            found = _expand(client, target, listings)
            if isinstance(found, VideoApiError):
                reason = f"{target}: listing the library failed ({found})"
                plan.refused.append(Refusal(spec.row, "target", str(target), reason))
                skipped[spec.id] = reason
                continue
            if not found:
                reason = f"{target} matches no video"
                plan.refused.append(Refusal(spec.row, "target", str(target), reason, warning=True))
                skipped[spec.id] = reason
                continue
            ids = tuple(found)
        too_long = None if spec.id in called else _past_the_end(spec, ids, durations, listings.values())
        if too_long is not None:
            plan.refused.append(Refusal(spec.row, too_long[0], too_long[1], too_long[1]))
            skipped[spec.id] = too_long[1]
            continue
        waits = tuple(
            ref_text(ref)
            for ref in spec.refs
            if ref.kind is TargetKind.OP
            or (ref.kind is TargetKind.KEY and items[ref.value].state not in COMPLETE_STATES)
        )
        plan.planned.append(
            PlannedOp(
                row=spec.row,
                op_id=spec.id,
                kind=spec.kind,
                target=str(target),
                video_ids=ids,
                reference=reference,
                params=describe_params(spec.params, video_of),
                waits_for=waits,
            )
        )
    plan.refused.sort(key=lambda r: (r.row or 0, r.field, r.reason))
    return plan


def _past_the_end(
    spec: OperationSpec,
    ids: tuple[str, ...],
    durations: Durations,
    listings: Iterable[list[Video] | VideoApiError],
) -> tuple[str, str] | None:
    """(field, reason) when the operation's trim or chapters lie past the end of a video it acts on (its
    duration from a listing already made, else one GET); None when they fit or the duration is not known."""
    if not ids or not needs_duration(spec):
        return None
    for listed in listings:
        if not isinstance(listed, VideoApiError):
            durations.learn(listed)
    for video_id in ids:
        duration = durations.of(video_id)
        found = past_the_end(spec, video_id, duration) if duration else None
        if found is not None:
            return found
    return None


def _op_refs(spec: OperationSpec) -> list[tuple[str, Target]]:
    found = [("target", spec.target)]
    if isinstance(spec.params, ConcatParams):
        found += [("prepend", t) for t in spec.params.prepend] + [("append", t) for t in spec.params.append]
    return [(name, t) for name, t in found if t.kind is TargetKind.OP]


def _refusal(error: RowError, items: Mapping[str, Item], have_ledger: bool) -> Refusal:
    """A read or graph error as a refused row; a key: the ledger has without a video says so."""
    reason = error.reason
    value = str(error.value)
    if value.startswith("key:") and "is no item of the ledger" in reason:
        key = value[4:]
        item = items.get(key)
        if item is not None:
            reason = f"{value}: the ledger's item has no video (state {item.state})"
        elif not have_ledger:
            reason = f"{value}: no ledger file, so no key: target can be resolved (give --ledger)"
    return Refusal(error.row, error.field, value, reason)


def _expand(
    client: VideoClient,
    target: Target,
    listings: dict[tuple[str | None, str | None, str | None], list[Video] | VideoApiError],
) -> list[str] | VideoApiError:
    """The ids of the videos a select: target finds (listing order); one listing per distinct filter set."""
    selector = target.selector
    assert selector is not None  # a select: target always carries its parsed selector
    title = selector.title if selector.title is not None and not selector.title_is_glob else None
    key = (selector.project_id, selector.folder_id, title)
    if key not in listings:
        try:
            listings[key] = list(
                client.videos.iter(
                    project_id=selector.project_id, folder_id=selector.folder_id, title=title, per_page=100
                )
            )
        except AuthError:
            raise
        except VideoApiError as exc:
            listings[key] = exc
    listed = listings[key]
    if isinstance(listed, VideoApiError):
        return listed
    return [v.id for v in listed if _selected(selector, v)]


def _selected(selector: Selector, video: Video) -> bool:
    """Every clause, checked here (the listing's own filters too, when the answer has the field)."""
    if video.deleted_at is not None:
        return False
    for wanted, have in ((selector.project_id, video.project_id), (selector.folder_id, video.folder_id)):
        if wanted is not None and have is not None and not same_id(wanted, have):
            return False
    shown = {"title": video.title, "tags": video.tags, "status": video.status, "created_at": video.created_at}
    return selector.matches(shown)


# ---------------------------------------------------------------------------------------------- parameters


def describe_params(params: OpParams, video_of: dict[str, str] | None = None) -> str:
    """An operation's parameters in short, secret-free (a replace source without its query string)."""
    video_of = video_of or {}
    parts: list[str] = []
    if isinstance(params, UpdateParams):
        if params.title is not None:
            parts.append(f"title={_short(params.title)}")
        if params.description is not None:
            parts.append(f"description=({len(params.description)} chars)")
        if params.tags is not None:
            parts.append(f"tags=[{', '.join(params.tags)}]" if params.tags else "tags cleared")
        if params.privacy_type is not None:
            parts.append(f"privacy_type={params.privacy_type.value}")
        if params.privacy_domains is not None:
            parts.append(f"privacy_domains=[{', '.join(params.privacy_domains)}]")
    elif isinstance(params, ChaptersParams):
        if not params.items:
            parts.append("chapters cleared")
        else:
            first = params.items[0]
            parts.append(f"{len(params.items)} chapters from {_clock(first.time)} {_short(first.title)}")
    elif isinstance(params, CopyParams):
        parts.append(f"into {params.parent_id}" if params.parent_id else "into the source's place")
    elif isinstance(params, MoveParams):
        parts.append(f"to project {params.project_id}")
        if params.folder_id:
            parts.append(f"folder {params.folder_id}")
    elif isinstance(params, CutParams):
        if params.trim:
            kept = params.kept_seconds or 0.0
            parts.append(f"trim {len(params.trim)} range{'s' * (len(params.trim) != 1)} keeping {kept:g} s")
        if params.crop:
            c = params.crop
            parts.append(f"crop {c.w:g}x{c.h:g}+{c.x:g}+{c.y:g}" + (f" {c.quality}" if c.quality else ""))
        for name in ("project_id", "folder_id"):
            if getattr(params, name):
                parts.append(f"{name}={getattr(params, name)}")
        if params.title is not None:
            parts.append(f"title={_short(params.title)}")
        if params.description is not None:
            parts.append(f"description=({len(params.description)} chars)")
    elif isinstance(params, ConcatParams):
        if params.prepend:
            parts.append(f"prepend [{_targets(params.prepend, video_of)}]")
        if params.append:
            parts.append(f"append [{_targets(params.append, video_of)}]")
        if params.replace:
            parts.append("replace")
    elif isinstance(params, AttachParams):
        parts.append(f"attach [{', '.join(material_name(s) for s in params.sources)}]")
        if params.enable is not None:
            parts.append(f"additional_materials_enabled={str(params.enable).lower()}")
    elif isinstance(params, ReplaceParams):
        parts.append(f"source {safe_uri(params.source)}")
        if params.trim:
            parts.append(f"trim {_trim(params.trim)}")
    return ", ".join(parts)


def _targets(targets: Iterable[Target], video_of: dict[str, str]) -> str:
    return ", ".join(
        f"{video_of[t.value]} ({t})" if t.kind is TargetKind.KEY and t.value in video_of else str(t)
        for t in targets
    )


def _trim(r: TrimRange) -> str:
    return f"from {r.start:g} s" + (f" for {r.length:g} s" if r.length is not None else " to the end")


def _clock(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    return (
        f"{int(minutes)}:{rest:06.3f}".rstrip("0").rstrip(".")
        if rest % 1
        else f"{int(minutes)}:{int(rest):02d}"
    )


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _ids_text(ids: tuple[str, ...]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")
