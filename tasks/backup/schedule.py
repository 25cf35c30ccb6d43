"""A backup run: list the videos, back up each that needs it (threads), mark the ones gone from the service,
prune them when asked, then rewrite the root's index when it changed. Where backup decides what next."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from connectors.errors import NotFoundError, VideoApiError, stops_run
from connectors.models import Video
from state.machine import OpStatus
from tasks.backup.held import INDEX_STEP, Held, backup_key, held_videos
from tasks.backup.index import DELETED, INVENTORY, build_index, inventory_source, write_index
from tasks.backup.listing import VideoSelection, decide, in_selection, list_videos
from tasks.backup.metadata import listing_mark
from tasks.backup.video import BackupContext, VideoResult, back_up_video, step
from tasks.copying.steps import STOPPED, each_item

__all__ = ["RESULT_STATES", "back_up"]

#: States of a video in a run's results, in the order the summary counts them.
RESULT_STATES = (
    "copied", "updated", "unchanged", "pending", "skipped", "failed", "deleted", "moved", "pruned", STOPPED,
)  # fmt: skip


def _listed(ctx: BackupContext, video: Video, held: Held | None, selection: VideoSelection) -> VideoResult:
    """A video the listing showed: read and backed up when it needs it."""
    decision = decide(video, held, selection.since)
    if not decision.read:
        copied = (held.copied if held is not None else None) or {}
        return VideoResult(
            video.id,
            decision.state,
            decision.reason,
            quality=str(copied.get("quality") or ""),
            md5=str(copied.get("md5") or ""),
            path=str(copied.get("path") or ""),
        )
    try:
        fresh = ctx.client.videos.get(video.id)  # every field (tags), fresh links
    except NotFoundError:
        if held is not None and held.kept:
            return _mark_gone(ctx, video.id, "deleted in the service (404)", moved=False)
        return VideoResult(video.id, "skipped", "deleted in the service while the backup ran")
    except VideoApiError as exc:
        if stops_run(exc):
            raise
        return VideoResult(video.id, "failed", f"reading the video: {exc}")
    return back_up_video(ctx, fresh, listing_mark(video), held or Held(video.id))


def _mark_gone(ctx: BackupContext, video_id: str, why: str, *, moved: bool) -> VideoResult:
    """Record that a kept video left the service (or the selection): the backup keeps it, marked."""
    mark = {"gone": True, "moved": moved, "why": why, "at": ctx.now().isoformat()}
    ok, out = step(ctx, video_id, "gone", {"video_id": video_id, "why": why}, lambda: mark)
    if not ok:
        return VideoResult(video_id, "failed", str(out))
    return VideoResult(video_id, "moved" if moved else "deleted", why, steps=["gone"])


def _missing(ctx: BackupContext, held: Held, selection: VideoSelection) -> VideoResult:
    """A video the backup holds that the listing did not show: read once to tell deleted from moved (or a
    listing that missed it: then it is backed up like a listed one). Never believed gone from a listing."""
    gone = held.gone
    if gone is not None:
        state = "moved" if gone.get("moved") else "deleted"
        return VideoResult(held.video_id, state, f"kept; {gone.get('why')} (seen {gone.get('at')})")
    try:
        video = ctx.client.videos.get(held.video_id)
    except NotFoundError:
        return _mark_gone(ctx, held.video_id, "deleted in the service (404)", moved=False)
    except VideoApiError as exc:
        if stops_run(exc):
            raise
        return VideoResult(held.video_id, "failed", f"reading a video the listing did not show: {exc}")
    if video.deleted_at is not None:
        return _mark_gone(ctx, held.video_id, "deleted in the service (deleted_at)", moved=False)
    if not in_selection(video, selection):
        return _mark_gone(ctx, held.video_id, "moved out of the backed-up project or folder", moved=True)
    return back_up_video(ctx, video, listing_mark(video), held)


def _prune(ctx: BackupContext, held: Held) -> VideoResult:
    """--prune: remove a gone video's files from the backup (one op, repeatable: deletes are harmless)."""
    keys = [
        str(r["object_key"]) for s in ("copy", "metadata") if (r := held.result(s)) and r.get("object_key")
    ]
    keys += [str(f["object_key"]) for f in (held.result("files") or {}).get("files", [])]

    def call() -> dict[str, Any]:
        return {"removed": [k for k in keys if ctx.dest.delete(k)], "why": (held.gone or {}).get("why")}

    ok, out = step(ctx, held.video_id, "prune", {"objects": len(keys)}, call, kind="backup_prune")
    if not ok:
        return VideoResult(held.video_id, "failed", str(out))
    return VideoResult(held.video_id, "pruned", f"{len(out['removed'])} objects removed", steps=["prune"])


def _index(ctx: BackupContext, selection: VideoSelection) -> str | None:
    """Rewrite the root's index when what it says changed (op backup:<destination id>:index); the error."""
    key = backup_key(ctx.dest_id, None, INDEX_STEP)
    held = held_videos(ctx.ledger, ctx.dest_id)
    index = build_index(held, inventory_source(ctx.dest), selection.folder_id)
    done = ctx.ledger.ops(op_key=key, status=OpStatus.DONE)
    last = done[-1].result if done and isinstance(done[-1].result, dict) else {}
    if last.get("hash") == index.digest:
        return None

    def call() -> dict[str, Any]:
        return write_index(
            ctx.dest,
            index,
            project_id=selection.project_id,
            folder_id=selection.folder_id,
            written_at=ctx.now(),
            had_deleted=bool(last.get("deleted")),
        )

    names = (INVENTORY, DELETED, "manifest.parquet", "manifest.json")
    params = {"videos": len(index.rows), "deleted": len(index.deleted)}
    ok, out = step(ctx, None, INDEX_STEP, params, call, leftovers=[ctx.dest.key(n) for n in names])
    return None if ok else str(out)


def back_up(
    ctx: BackupContext, selection: VideoSelection, *, transfers: int = 2, prune: bool = False
) -> tuple[list[VideoResult], str | None]:
    """Back up the selection into the destination: (one result per video, the index's error if it failed).

    The listing comes first and whole (VideoApiError when it keeps failing: nothing is marked gone then). A
    refusal of the token or the workspace (connectors.errors.stops_run) stops the run: the video that met
    it and those not started yet are `stopped`.
    """
    held = held_videos(ctx.ledger, ctx.dest_id)
    listed = list_videos(ctx.client, selection)
    seen = {video.id for video in listed}

    def listed_one(video: Video) -> VideoResult:
        return _listed(ctx, video, held.get(video.id), selection)

    def missing_one(entry: Held) -> VideoResult:
        return _missing(ctx, entry, selection)

    def listed_stopped(video: Video, why: str) -> VideoResult:
        return VideoResult(video.id, STOPPED, why)

    def missing_stopped(entry: Held, why: str) -> VideoResult:
        return VideoResult(entry.video_id, STOPPED, why)

    with ThreadPoolExecutor(max_workers=max(1, transfers), thread_name_prefix="backup") as pool:
        results = list(pool.map(each_item(ctx.stop, listed_one, listed_stopped), listed))
        missing = [entry for vid, entry in held.items() if vid not in seen and entry.kept]
        results += pool.map(each_item(ctx.stop, missing_one, missing_stopped), missing)
    if prune:
        # Only what the service deleted: a video moved out of the selection still exists (and a mistyped
        # --project must not empty a backup).
        held_now = held_videos(ctx.ledger, ctx.dest_id).values()
        gone = [e for e in held_now if e.gone is not None and not e.gone.get("moved")]
        pruned = {r.video_id: r for r in map(lambda entry: _prune(ctx, entry), gone)}
        results = [pruned.pop(r.video_id, r) for r in results] + list(pruned.values())
    return results, _index(ctx, selection)
