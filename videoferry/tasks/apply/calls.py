"""The calls of `videoferry apply`, one per operation kind, and how each is reconciled after a lost answer.

Creates (copy, concat, and a cut the service answers with a new video) are looked up by listing with the
rules every create shares (tasks/lookup.py). In-place calls (a cut written back, replace) compare the video
with the snapshot taken before the call (version, updated_at, duration, file size). An attach is looked
up on the video (its materials, tasks/sessions.py). Edits that are the same whatever the video was (update,
chapters, move, delete) are simply repeated.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from videoferry.connectors.errors import VideoApiError
from videoferry.connectors.models import Video
from videoferry.connectors.s3 import parse_s3_uri, presign_get, shared_s3_client
from videoferry.connectors.sources import open_source
from videoferry.core.item import SourceKind, source_kind
from videoferry.core.operation import (
    AttachParams,
    ChaptersParams,
    ConcatParams,
    CopyParams,
    CutParams,
    MoveParams,
    OperationSpec,
    OpKind,
    ReplaceParams,
    UpdateParams,
)
from videoferry.state.applied import UNIT_OWNER
from videoferry.state.models import Op
from videoferry.tasks.lookup import SentCreate, besides, find_created, original_size
from videoferry.tasks.sessions import attach_files, missing_materials, send_by_tus

if TYPE_CHECKING:
    from videoferry.tasks.apply.context import ApplyContext

log = logging.getLogger(__name__)

#: Operations whose result is a video the service processes again before it is `done`.
PROCESSED_KINDS = frozenset({OpKind.COPY, OpKind.CONCAT, OpKind.CUT, OpKind.REPLACE})
#: Operations whose lost answer is looked up on the service (a listing's lag applies): the processed ones
#: and attach (its materials are read on the video); the others are the same whatever happened: repeated.
LOOKED_UP_KINDS = PROCESSED_KINDS | {OpKind.ATTACH}
#: Operations that make a new video (cut may, when the service answers with another id).
CREATE_KINDS = frozenset({OpKind.COPY, OpKind.CONCAT})


class CutUnnamed(Exception):
    """A cut the service accepted whose result could not be found (failed: it is never cut again)."""

    code = "cut_unnamed"


class ResultUnnamed(Exception):
    """A cut was accepted, its answer named the source, and the source is unchanged: the service made a new
    video without naming it (spec: answers not shown). Look it up; never cut again."""


class VideoMissing(Exception):
    """The video a unit acts on does not exist (found before its call: nothing was sent)."""


@dataclass(frozen=True)
class Called:
    """What a call (or its reconcile) established: the video it left, whether it is new, what happened."""

    video: Video | None
    created: bool
    detail: str


def snapshot(video: Video) -> dict[str, Any]:
    """What an in-place call's reconcile compares, and where a create's result is looked for."""
    return {
        "title": video.title,
        "project_id": video.project_id,
        "folder_id": video.folder_id,
        "version": video.version,
        "updated_at": video.updated_at.isoformat() if video.updated_at else None,
        "duration": video.duration,
        "file_size": original_size(video),
        "status": video.status,
    }


def changed(before: dict[str, Any], video: Video) -> bool:
    """Whether the video differs from its snapshot in anything an in-place call changes."""
    now = snapshot(video)
    return any(before.get(k) != now[k] for k in ("version", "updated_at", "duration", "file_size"))


def call(
    ctx: ApplyContext,
    spec: OperationSpec,
    video_id: str,
    others: dict[str, str],
    before: dict[str, Any] | None = None,
) -> Called:
    """Make the unit's call on video_id (others: op:/key: targets of prepend/append resolved to ids).

    before: the snapshot taken before the call (a cut answered with the source unchanged: ResultUnnamed).
    """
    params = spec.params
    client = ctx.client
    if isinstance(params, UpdateParams):
        fields: dict[str, Any] = {
            "title": params.title,
            "description": params.description,
            "tags": list(params.tags) if params.tags is not None else None,
            "privacy_type": params.privacy_type.value if params.privacy_type is not None else None,
            "privacy_domains": list(params.privacy_domains) if params.privacy_domains is not None else None,
        }
        video = client.videos.update(video_id, **{k: v for k, v in fields.items() if v is not None})
        return Called(video, False, "updated")
    if isinstance(params, ChaptersParams):
        client.videos.set_chapters(video_id, [(c.time, c.title) for c in params.items])
        return Called(
            None, False, f"{len(params.items)} chapters set" if params.items else "chapters cleared"
        )
    if isinstance(params, MoveParams):
        video = client.videos.move(video_id, params.project_id, params.folder_id)
        return Called(video, False, "moved")
    if isinstance(params, CopyParams):
        video = client.videos.copy(video_id, params.parent_id)
        return Called(video, True, "copied")
    if isinstance(params, ConcatParams):
        prepend = [others[str(t)] for t in params.prepend]
        append = [others[str(t)] for t in params.append]
        video = client.videos.concat(video_id, prepend=prepend, append=append, replace=params.replace)
        return Called(video, video.id != video_id, "concatenated")
    if isinstance(params, CutParams):
        video = client.videos.cut(
            video_id,
            trim=[(r.start, r.length or 0.0) for r in params.trim] or None,
            crop=None
            if params.crop is None
            else {k: v for k, v in vars(params.crop).items() if v is not None},
            title=params.title,
            description=params.description,
            project_id=params.project_id,
            folder_id=params.folder_id,
        )
        new = video.id != video_id
        if not new and before is not None and not changed(before, video):
            raise ResultUnnamed(video_id)
        return Called(video, new, "cut made a new video" if new else "cut written back to the same video")
    if isinstance(params, ReplaceParams):
        return _replace(ctx, params, video_id)
    if isinstance(params, AttachParams):
        return _attach(ctx, params, video_id)
    client.videos.delete(video_id)
    return Called(None, False, "deleted")


def _replace(ctx: ApplyContext, params: ReplaceParams, video_id: str) -> Called:
    """New bytes for video_id (X-Replace-Video-ID): a file streamed, an s3:// or URL source imported."""
    current = ctx.client.videos.get(video_id)
    parent = current.folder_id or current.project_id or ""
    title = current.title or video_id
    kind = source_kind(params.source)
    if kind is SourceKind.FILE:
        source = open_source(params.source, s3=ctx.s3)
        if resumable(ctx, params, source.size):
            session = ctx.client.uploads.init_replace(
                video_id=video_id, filesize=source.size, filename=source.name
            )
            send_by_tus(
                ctx.client,
                session.endpoint,
                source,
                what="replace",
                chunk_size=ctx.chunk_size,
                stop=ctx.abort,
            )
            return _taken(ctx, video_id, "replaced (resumable upload)")
        ctx.client.uploads.single(
            parent_id=parent,
            title=title,
            source=source,
            replace_video_id=video_id,
            trim=params.trim,
            title_key=video_id,
        )
    else:
        url = params.source
        if kind is SourceKind.S3:
            bucket, key = parse_s3_uri(params.source)
            url = presign_get(shared_s3_client(ctx.s3), bucket, key)
        ctx.client.uploads.import_url(
            parent_id=parent,
            title=title,
            url=url,
            replace_video_id=video_id,
            trim=params.trim,
            title_key=video_id,
        )
    return _taken(ctx, video_id, "replaced")


def _taken(ctx: ApplyContext, video_id: str, detail: str) -> Called:
    """An in-place call that took effect, with the video read once for its status. That read failing is not
    the call failing: recorded as a refusal, the unit would be tried again by the next run and the bytes
    sent a second time (a second replace). The call is done; the unit waits for its video by polling."""
    try:
        return Called(ctx.client.videos.get(video_id), False, detail)
    except VideoApiError as exc:
        log.warning("%s: %s; its status is read by the next poll (%s)", video_id, detail, exc)
        return Called(None, False, detail)


def _attach(ctx: ApplyContext, params: AttachParams, video_id: str) -> Called:
    """Each file made an additional material of video_id once (tasks/sessions.attach_files), then the
    video's additional_materials_enabled when the operation gives it."""
    done = attach_files(
        ctx.client, video_id, params.sources, s3=ctx.s3, chunk_size=ctx.chunk_size, stop=ctx.abort
    )
    if params.enable is not None:
        video = ctx.client.videos.update(video_id, additional_materials_enabled=params.enable)
    else:
        video = ctx.client.videos.get(video_id)
    return Called(video, False, done.detail())


def _attached(ctx: ApplyContext, params: AttachParams, video_id: str) -> Called | None:
    """An attach whose answer was lost: done when the video holds every material (and the flag), else None
    (made again: attach_files sends only what is missing)."""
    video = ctx.client.videos.get(video_id)
    if missing_materials(video, params.sources):
        return None
    if params.enable is not None and video.additional_materials_enabled != params.enable:
        return None
    return Called(video, False, f"{len(params.sources)} attached (found after a lost answer)")


def resumable(ctx: ApplyContext, params: ReplaceParams, size: int) -> bool:
    """Whether a replace's file goes by tus (a /v2/init session of type replace, resumed from the server's
    offset after a cut) rather than in one request: from one tus chunk up, and without a trim (only the
    single request carries X-Video-Trim)."""
    return params.trim is None and size >= ctx.chunk_size


def before_of(ctx: ApplyContext, spec: OperationSpec, video_id: str) -> dict[str, Any] | None:
    """The snapshot an intent carries: in-place calls and creates (None for edits repeatable by content)."""
    if spec.kind in PROCESSED_KINDS:
        return snapshot(ctx.client.videos.get(video_id))
    return None


def reconcile(ctx: ApplyContext, spec: OperationSpec, video_id: str, op: Op) -> Called | None:
    """What a call whose answer was lost did: Called when it took effect, None when it is not seen (believed
    once the settle time is over: tasks/exactly_once.look_up); Postponed when the lookup cannot decide.
    """
    if isinstance(spec.params, AttachParams):
        return _attached(ctx, spec.params, video_id)
    if spec.kind not in PROCESSED_KINDS:
        return None  # update, chapters, move, delete: the same whatever happened before; repeat
    before = dict(op.before or {})
    sent = SentCreate(
        owner=UNIT_OWNER + (op.op_key or ""),
        title=result_title(spec, before),
        parent_id=result_parent(spec, before),
        intent_at=op.intent_at,
    )
    if spec.kind in (OpKind.CUT, OpKind.REPLACE):
        video = ctx.client.videos.get(video_id)
        if changed(before, video):
            what = "cut written back to the same video" if spec.kind is OpKind.CUT else "replaced"
            return Called(video, False, f"{what} (found after a lost answer)")
        if spec.kind is OpKind.REPLACE:
            return None
    found = find_created(ctx.client, sent, besides(ctx.ledger.video_owners, [video_id]))
    if found is not None:
        what = "cut made a new video" if spec.kind is OpKind.CUT else f"{spec.kind.value} made a video"
        return Called(found, True, f"{what} (found by listing after a lost answer)")
    return None


def result_title(spec: OperationSpec, before: dict[str, Any]) -> str:
    """The title the video a create makes carries: the cut's own title, else the source's."""
    if isinstance(spec.params, CutParams) and spec.params.title is not None:
        return spec.params.title
    return str(before.get("title") or "")


def result_parent(spec: OperationSpec, before: dict[str, Any]) -> str | None:
    """Where the video a create makes appears: the copy's / cut's destination, else the source's place."""
    params = spec.params
    if isinstance(params, CopyParams) and params.parent_id:
        return params.parent_id
    if isinstance(params, CutParams) and (params.folder_id or params.project_id):
        return params.folder_id or params.project_id
    return before.get("folder_id") or before.get("project_id")
