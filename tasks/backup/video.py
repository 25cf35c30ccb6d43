"""One video's backup steps, each exactly once through the ledger: its file, its other files, its metadata."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectors.models import Video
from state.models import Op
from tasks.assets import choose_asset, extension
from tasks.backup.files import extra_files, save_files
from tasks.backup.held import Held, backup_key, video_dir
from tasks.backup.metadata import content_mark, digest, files_mark, inventory_row, metadata_document
from tasks.copying.steps import CopyContext, copy_step, run_step
from tasks.exactly_once import OpJournal

__all__ = ["BackupContext", "VideoResult", "back_up_video", "step"]


@dataclass(kw_only=True)
class BackupContext(CopyContext):
    """What every video's steps need (CopyContext), and the destination's id (its ledger keys)."""

    dest_id: str


@dataclass
class VideoResult:
    """What happened to one video in this run (no title: reports carry ids, sizes and digests only)."""

    video_id: str
    state: str  # copied, updated, unchanged, pending, skipped, failed, deleted, moved, pruned, stopped
    reason: str = ""
    bytes: int = 0  #: bytes of its file copied in this run
    quality: str = ""
    md5: str = ""
    path: str = ""  #: its file's path under the backup's root
    steps: list[str] = field(default_factory=list)
    #: what the run could not save of the video without failing it (a poster link that gives nothing, ...)
    notes: list[str] = field(default_factory=list)

    @property
    def copied(self) -> int:
        """The bytes this run copied of it (its file)."""
        return self.bytes

    @property
    def label(self) -> str:
        """How the run's lines name it: its id."""
        return self.video_id

    @property
    def source(self) -> str:
        """How a failure names it (flows/job.failure)."""
        return f"video {self.video_id}"


def step(
    ctx: BackupContext,
    video_id: str | None,
    name: str,
    params: dict[str, Any],
    call: Callable[[], dict[str, Any]],
    *,
    recover: Callable[[Op], dict[str, Any] | None] | None = None,
    leftovers: Sequence[str] = (),
    kind: str = "backup",
) -> tuple[bool, Any]:
    """Run one step exactly once (tasks/copying/steps.run_step): (True, result) or (False, error text).
    leftovers: what a crashed attempt's writes may have left unfinished (removed before it is made again);
    without recover the step is repeatable (writing the same files again is harmless)."""
    return run_step(
        ctx, _journal(ctx, video_id, name, kind, params), call, recover=recover, leftovers=leftovers
    )


def _journal(
    ctx: BackupContext, video_id: str | None, name: str, kind: str, params: dict[str, Any]
) -> OpJournal[Any]:
    return OpJournal(
        ctx.ledger,
        ctx.run_id,
        backup_key(ctx.dest_id, video_id, name),
        kind,
        params,
        item_key=f"backup:{ctx.dest_id}" + (f":{video_id}" if video_id else ""),
        video_id=video_id,
    )


def _copy(ctx: BackupContext, video: Video, held: Held, result: VideoResult) -> str | None:
    """Copy the video's file when it is new or its content changed; the error text when it failed."""
    asset = choose_asset(video)
    if asset is None:
        return "copy: no downloadable asset (no original kept and no other quality with a download link)"
    result.quality = asset.quality or ""
    mark = content_mark(video, asset)
    before = held.copied
    if before is not None and before.get("content") == mark:
        result.md5, result.path = str(before.get("md5") or ""), str(before.get("path") or "")
        return None
    path = (*video_dir(video.id), f"{video.id}.{extension(asset)}")
    key = ctx.dest.key(*path)
    params = {
        "video_id": video.id,
        "asset_id": asset.id,
        "quality": asset.quality,
        "bytes": asset.file_size,
        "md5": asset.md5.lower() if asset.md5 else None,
        "object_key": key,
        "path": "/".join(path),
        "content": mark,
        "version": video.version,
    }
    link = str(asset.download_link)

    def same(sent: Mapping[str, Any]) -> bool:
        return sent.get("content") == mark  # a copy a crash interrupted is adopted only if still this content

    journal = _journal(ctx, video.id, "copy", "backup", params)
    ok, out = copy_step(
        ctx, journal, link, size=asset.file_size, md5=asset.md5, stamp="backed_up_at", same=same
    )
    if not ok:
        return str(out)
    result.steps.append("copy")
    result.bytes = 0 if out.get("adopted") else int(out.get("bytes") or 0)
    result.md5, result.path = str(out.get("md5") or ""), str(out.get("path") or "")
    superseded = str((before or {}).get("object_key") or "")
    if superseded and superseded != key:
        ctx.dest.delete(superseded)  # the previous content under another name (its extension changed)
    return None


def _files(
    ctx: BackupContext, video: Video, document: dict[str, Any], held: Held, result: VideoResult
) -> str | None:
    """Save the poster, subtitles and additional materials when they changed; the error text if it failed."""
    mark = files_mark(document)
    before = held.result("files")
    if before is not None and before.get("mark") == mark:
        return None

    def call() -> dict[str, Any]:
        saved, notes = save_files(ctx, video)
        gone = {str(f["object_key"]) for f in (before or {}).get("files", [])} - {
            f["object_key"] for f in saved
        }
        for key in sorted(gone):
            ctx.dest.delete(key)
        return {"mark": mark, "files": saved, "notes": notes}

    keys = [ctx.dest.key(*video_dir(video.id), *extra.name.split("/")) for extra in extra_files(video)]
    ok, out = step(ctx, video.id, "files", {"video_id": video.id, "mark": mark}, call, leftovers=keys)
    if not ok:
        return str(out)
    if out["files"] or before is not None:
        result.steps.append("files")
    result.notes += out.get("notes") or []
    return None


def _metadata(
    ctx: BackupContext,
    video: Video,
    document: dict[str, Any],
    listing: str | None,
    held: Held,
    result: VideoResult,
) -> str | None:
    """Write metadata.json when the document changed (else only remember what the listing showed)."""
    doc_hash = digest(document)
    before = held.result("metadata")
    if before is not None and before.get("hash") == doc_hash and before.get("listing") == listing:
        return None
    write = before is None or before.get("hash") != doc_hash
    path = (*video_dir(video.id), "metadata.json")
    key = ctx.dest.key(*path)
    data = json.dumps(document, ensure_ascii=False, indent=2, sort_keys=True).encode("utf-8")
    row = inventory_row(video, "")
    params = {
        "video_id": video.id,
        "hash": doc_hash,
        "listing": listing,
        "path": "/".join(path),
        "write": write,
    }

    def call() -> dict[str, Any]:
        if write:
            ctx.dest.put_bytes(key, data, "application/json")
        kept = before if not write and before is not None else {}
        return {
            **params,
            "object_key": key,
            "bytes": len(data) if write else kept.get("bytes"),
            "md5": digest_md5(data) if write else kept.get("md5"),
            "row": {k: v for k, v in row.items() if k != "source"},
            "created_at": document.get("created_at"),
            "updated_at": document.get("updated_at"),
            "project_id": video.project_id,
            "folder_id": video.folder_id,
        }

    ok, out = step(ctx, video.id, "metadata", params, call, leftovers=[key])
    if not ok:
        return str(out)
    if write:
        result.steps.append("metadata")
    return None


def digest_md5(data: bytes) -> str:
    """md5 of a small file the backup writes (the manifest lists every object's md5)."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def back_up_video(ctx: BackupContext, video: Video, listing: str, held: Held) -> VideoResult:
    """Back up one video read just now (fresh links): its file, its other files, its metadata, each only when
    it changed. `listing` is what its listing showed (listing_mark): kept once every step succeeded, so a
    later run reads the video again only when the listing moves (or a step failed)."""
    result = VideoResult(video.id, "unchanged")
    if video.status != "done":
        result.state = "skipped" if video.status in ("error", "aborted") else "pending"
        result.reason = f"the video is {video.status} in the service"
        return result
    document = metadata_document(video)
    errors = [e for e in (_copy(ctx, video, held, result), _files(ctx, video, document, held, result)) if e]
    error = _metadata(ctx, video, document, None if errors else listing, held, result)
    errors += [error] if error else []
    if held.gone is not None:
        ok, out = step(
            ctx, video.id, "gone", {"video_id": video.id}, lambda: {"gone": False, "why": "listed again"}
        )
        errors += [] if ok else [str(out)]
    if errors:
        result.state, result.reason = "failed", "; ".join(errors)
    elif "copy" in result.steps:
        result.state = "copied"
    elif result.steps:
        result.state = "updated"
    return result
