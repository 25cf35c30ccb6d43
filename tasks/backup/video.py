"""One video's backup steps, each exactly once through the ledger: its file, its other files, its metadata."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from connectors.client import VideoClient
from connectors.download import Downloader
from connectors.errors import VideoApiError
from connectors.models import Video
from state.ledger import Ledger
from state.models import Op
from tasks.assets import choose_asset, extension
from tasks.backup.files import extra_files, save_files
from tasks.backup.held import Held, op_key, video_dir
from tasks.backup.metadata import content_mark, digest, files_mark, inventory_row, metadata_document
from tasks.destination import Destination
from tasks.exactly_once import Intent, Lookup, NotMade, OpJournal, exactly_once
from tasks.streamed_copy import COPY_ERRORS, adopt_copy, copy_link

__all__ = ["BackupContext", "VideoResult", "STEP_ERRORS", "back_up_video", "step"]

#: What a step's failure can be: the service, the copy (download, check, destination), a bad value.
STEP_ERRORS = (VideoApiError, *COPY_ERRORS, ValueError)
#: Why a copy left open by a crash is made again: what it left was not a complete, verified object.
NOT_TAKEN_EFFECT = "repeated after an unknown outcome: no complete object with the expected md5"
#: Why a repeatable step left open by a crash is made again (what it left unfinished removed first).
REPEATED = "repeated after an unknown outcome: its unfinished writes removed"


@dataclass
class BackupContext:
    """What every video's steps need: ledger and run, client, destination (and its id), downloader."""

    ledger: Ledger
    run_id: str
    client: VideoClient
    dest: Destination
    dest_id: str
    downloader: Downloader
    attempts: int = 5
    backoff: float = 0.5
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


@dataclass
class VideoResult:
    """What happened to one video in this run (no title: reports carry ids, sizes and digests only)."""

    video_id: str
    state: str  # copied, updated, unchanged, pending, skipped, failed, deleted, moved, pruned
    reason: str = ""
    bytes: int = 0  #: bytes of its file copied in this run
    quality: str = ""
    md5: str = ""
    path: str = ""  #: its file's path under the backup's root
    steps: list[str] = field(default_factory=list)
    #: what the run could not save of the video without failing it (a poster link that gives nothing, ...)
    notes: list[str] = field(default_factory=list)


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
    """Run one step exactly once (tasks/exactly_once.py): (True, result) or (False, error text).

    An intent a crash left open is settled first: what its writes left unfinished at `leftovers` (keys:
    multipart uploads, .part files) is removed, then recover(op) gives the result when the step had taken
    effect (a direct check of the destination, believed at once), None when not; without recover the step
    is repeatable (writing the same files again is harmless) and is made again.
    """
    journal: OpJournal[dict[str, Any]] = OpJournal(
        ctx.ledger,
        ctx.run_id,
        op_key(ctx.dest_id, video_id, name),
        kind,
        params,
        owner_key=f"backup:{ctx.dest_id}" + (f":{video_id}" if video_id else ""),
        video_id=video_id,
    )
    lookup = None
    if recover is not None or leftovers:

        def settle(intent: Intent) -> dict[str, Any] | None:
            for key in leftovers:
                ctx.dest.discard_partial(key)
            op = ctx.ledger.get_op(int(intent.ref))
            return recover(op) if recover is not None and op is not None else None

        lookup = Lookup(settle, listing=False, absent=NOT_TAKEN_EFFECT if recover else REPEATED)
    try:
        return True, exactly_once(journal, call, lookup=lookup, refused=STEP_ERRORS)
    except (*STEP_ERRORS, NotMade) as exc:
        return False, f"{name}: {exc}"


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

    def call() -> dict[str, Any]:
        copied = copy_link(
            ctx.dest,
            ctx.downloader,
            link,
            key,
            size=asset.file_size,
            md5=asset.md5,
            attempts=ctx.attempts,
            backoff=ctx.backoff,
        )
        return {**params, "bytes": copied.size, "md5": copied.md5, "backed_up_at": ctx.now().isoformat()}

    def recover(op: Op) -> dict[str, Any] | None:
        """A copy a crash interrupted: adopted when the object it was writing is complete and verified (and
        still this content), else its leftovers are removed and it is copied again."""
        sent = op.params
        key_then = str(sent.get("object_key") or "")
        if not key_then or not adopt_copy(ctx.dest, key_then, sent.get("bytes"), sent.get("md5")):
            return None
        if sent.get("content") != mark:
            return None
        return {**sent, "backed_up_at": ctx.now().isoformat(), "adopted": True}

    ok, out = step(ctx, video.id, "copy", params, call, recover=recover)
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
