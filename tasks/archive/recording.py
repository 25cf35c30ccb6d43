"""One recording's archive steps, each exactly once through the ledger: copy, sidecars, move, tags, delete."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from connectors.client import VideoClient
from connectors.download import Downloader
from connectors.errors import NotFoundError, VideoApiError
from state.ledger import Ledger
from state.machine import OpStatus
from state.models import Op
from tasks.archive.files import save_chat, save_qos
from tasks.archive.plan import UNKNOWN_STREAM, Layout, Recording, choose_asset, extension
from tasks.destination import Destination
from tasks.exactly_once import GapCheck, Intent, Lookup, NotMade, OpJournal, exactly_once
from tasks.streamed_copy import COPY_ERRORS, adopt_copy, copy_link

if TYPE_CHECKING:
    from tasks.gap import Gap

__all__ = ["ArchiveContext", "RecordingResult", "archive_recording", "op_key", "TERMINAL_BAD"]

#: Recording statuses that will never be archived (nothing complete to copy).
TERMINAL_BAD = ("error", "aborted")


def op_key(video_id: str, step: str) -> str:
    """The ledger key of one step of one recording: archive:<video_id>:<step>."""
    return f"archive:{video_id}:{step}"


def gap_subjects(ledger: Ledger) -> Iterable[str]:
    """Archive's gap subjects: the recordings' copies not done (their op keys; _copy's gap step adopts the
    destination object at its own key by size and md5: the same bytes, whenever written, so no mark bounds
    it)."""
    last: dict[str, str] = {}
    for op in ledger.ops(kind="archive"):
        if op.op_key and op.op_key.endswith(":copy"):
            last[op.op_key] = op.status
    return [key for key, status in last.items() if status != OpStatus.DONE]


@dataclass
class ArchiveContext:
    """What every recording's steps need: ledger and run, client, destination, downloader, choices."""

    ledger: Ledger
    run_id: str
    client: VideoClient
    dest: Destination
    downloader: Downloader
    quality: str = "best"
    move_to: tuple[str, str | None] | None = None
    tags: tuple[str, ...] = ()
    delete_after: bool = False
    attempts: int = 5
    backoff: float = 0.5
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    #: The replication gap when the run's remote ledger may be behind (tasks/gap.py), else None.
    gap: Gap | None = None


@dataclass
class RecordingResult:
    """What happened to one recording in this run."""

    event_id: str
    stream_id: str
    video_id: str
    state: str  # archived, already, pending, skipped, failed
    reason: str = ""
    bytes: int = 0
    object_key: str = ""
    steps: list[str] = field(default_factory=list)


#: What a step's failure can be: the service, the copy (download, check, destination), a bad value.
STEP_ERRORS = (VideoApiError, *COPY_ERRORS, ValueError)
#: Why a step left open by a crash is made again: its recovery check found it had not taken effect.
NOT_TAKEN_EFFECT = "repeated after an unknown outcome: it had not taken effect"


def _last(ctx: ArchiveContext, key: str) -> Op | None:
    ops = ctx.ledger.ops(op_key=key)
    return ops[-1] if ops else None


def _op(ctx: ArchiveContext, intent: Intent) -> Op:
    op = ctx.ledger.get_op(int(intent.ref))
    assert op is not None  # the intent being settled
    return op


def _step(
    ctx: ArchiveContext,
    rec: Recording,
    step: str,
    kind: str,
    params: dict[str, Any],
    call: Callable[[], Any],
    *,
    recover: Callable[[Op], Any] | None = None,
    gap: GapCheck[Any] | None = None,
) -> tuple[bool, Any]:
    """Run a step exactly once (tasks/exactly_once.py): (True, result) done now or before, (False, error
    text) failed now.

    A previous intent without outcome (a crash) is settled first: recover(op) returns the result when the
    step had taken effect (a direct check, believed at once), None when not (void: the step runs again).
    gap: the step's look-up across the replication gap (tasks/exactly_once.GapCheck), if any.
    """
    key = op_key(rec.video_id, step)
    last = _last(ctx, key)
    if last is not None and last.status == OpStatus.DONE:
        return True, last.result
    journal: OpJournal[Any] = OpJournal(
        ctx.ledger, ctx.run_id, key, kind, params, owner_key=f"archive:{rec.video_id}", video_id=rec.video_id
    )
    lookup = None
    if recover is not None:
        found = recover
        lookup = Lookup(lambda intent: found(_op(ctx, intent)), listing=False, absent=NOT_TAKEN_EFFECT)
    try:
        return True, exactly_once(journal, call, lookup=lookup, refused=STEP_ERRORS, gap=gap)
    except (*STEP_ERRORS, NotMade) as exc:
        return False, f"{step}: {exc}"


# -- copy -------------------------------------------------------------------------------------------


def _adopt(ctx: ArchiveContext, op: Op) -> dict[str, Any] | None:
    """After a crash: drop unfinished parts; an object already complete with the known md5 is adopted."""
    return _complete(ctx, op.params)


def _complete(ctx: ArchiveContext, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The copy's result when its object is already complete at the destination with the asset's size and
    md5 (unfinished parts dropped first); None when it is not (or no md5 is known to compare)."""
    key = str(params.get("object_key") or "")
    if not key or not adopt_copy(ctx.dest, key, params.get("bytes"), params.get("md5")):
        return None
    return {**params, "archived_at": ctx.now().isoformat(), "adopted": True}


def _copy(ctx: ArchiveContext, rec: Recording) -> tuple[bool, Any]:
    last = _last(ctx, op_key(rec.video_id, "copy"))
    if last is not None and last.status == OpStatus.DONE:
        return True, last.result  # archived by an earlier run: no call at all
    video = ctx.client.videos.get(rec.video_id)  # fresh signed links
    asset = choose_asset(video, ctx.quality)
    if asset is None:
        return False, f"copy: no downloadable asset of quality {ctx.quality}"
    layout = Layout(rec.event_id, rec.stream_id)
    key = ctx.dest.key(*layout.recording(rec.video_id, extension(asset)))
    params = {
        "event_id": rec.event_id,
        "event_name": rec.event.name,
        "stream_id": rec.stream_id,
        "video_id": rec.video_id,
        "title": video.title,
        "asset_id": asset.id,
        "quality": asset.quality,
        "bytes": asset.file_size,
        "md5": asset.md5 or None,
        "object_key": key,
    }
    link = str(asset.download_link)

    def complete_across_gap() -> dict[str, Any] | None:
        """The restored ledger may have missed this copy: an object already complete is adopted, not copied
        (an open intent is settled the same way, by recover)."""
        found = _complete(ctx, params)
        if found is not None:
            found["note"] = "found complete at the destination across the replication gap"
        return found

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
        return {**params, "bytes": copied.size, "md5": copied.md5, "archived_at": ctx.now().isoformat()}

    subject = op_key(rec.video_id, "copy")
    gap = GapCheck(ctx.gap, subject, complete_across_gap) if ctx.gap is not None else None
    return _step(ctx, rec, "copy", "archive", params, call, recover=lambda op: _adopt(ctx, op), gap=gap)


# -- the recording ----------------------------------------------------------------------------------


def _delete(client: VideoClient, video_id: str) -> dict[str, Any]:
    client.videos.delete(video_id)
    return {"deleted": True}


def _tidy(ctx: ArchiveContext, rec: Recording, result: RecordingResult) -> str | None:
    """Move, tags, delete: only called once the copy is verified and the sidecars are saved."""
    client = ctx.client
    if ctx.move_to is not None:
        project_id, folder_id = ctx.move_to
        ok, out = _step(
            ctx,
            rec,
            "move",
            "move",
            {"project_id": project_id, "folder_id": folder_id},
            lambda: {"project_id": client.videos.move(rec.video_id, project_id, folder_id).project_id},
        )
        if not ok:
            return str(out)
        result.steps.append("move")
    if ctx.tags:

        def set_tags() -> dict[str, Any]:
            current = list(client.videos.get(rec.video_id).tags or [])
            wanted = current + [t for t in ctx.tags if t not in current]
            if wanted != current:
                client.videos.update(rec.video_id, tags=wanted)
            return {"tags": wanted}

        ok, out = _step(ctx, rec, "tags", "update", {"tags": list(ctx.tags)}, set_tags)
        if not ok:
            return str(out)
        result.steps.append("tags")
    if ctx.delete_after:

        def gone(_: Op) -> dict[str, Any] | None:
            try:
                client.videos.get(rec.video_id)
            except NotFoundError:
                return {"deleted": True, "found_gone": True}
            return None

        ok, out = _step(
            ctx,
            rec,
            "delete",
            "delete_recording",
            {"event_id": rec.event_id},
            lambda: _delete(client, rec.video_id),
            recover=gone,
        )
        if not ok:
            return str(out)
        result.steps.append("delete")
    return None


def archive_recording(ctx: ArchiveContext, rec: Recording) -> RecordingResult:
    """Archive one recording: copy (verified), chat and QoS, then tidy; never tidy before the copy."""
    result = RecordingResult(rec.event_id, rec.stream_id, rec.video_id, "archived")
    status = rec.video.status
    if status != "done":
        result.state = "skipped" if status in TERMINAL_BAD else "pending"
        result.reason = f"recording is {status}"
        return result
    before = _last(ctx, op_key(rec.video_id, "copy"))
    was_done = before is not None and before.status == OpStatus.DONE
    ok, copied = _copy(ctx, rec)
    if not ok:
        result.state, result.reason = "failed", str(copied)
        return result
    result.bytes = int(copied.get("bytes") or 0)
    result.object_key = str(copied.get("object_key") or "")
    if not was_done:
        result.steps.append("copy")

    def sidecars() -> dict[str, Any]:
        if rec.stream_id == UNKNOWN_STREAM:
            return {
                "chat_keys": [],
                "qos_keys": [],
                "qos_records": 0,
                "note": "the recording names no stream",
            }
        chat_keys = save_chat(ctx.client, ctx.dest, rec)
        qos_keys, records = save_qos(ctx.client, ctx.dest, rec)
        return {"chat_keys": chat_keys, "qos_keys": qos_keys, "qos_records": records}

    side_before = _last(ctx, op_key(rec.video_id, "sidecars"))
    ok, out = _step(
        ctx, rec, "sidecars", "archive", {"event_id": rec.event_id, "stream_id": rec.stream_id}, sidecars
    )
    if not ok:
        result.state, result.reason = "failed", str(out)
        return result
    if side_before is None or side_before.status != OpStatus.DONE:
        result.steps.append("sidecars")
    error = _tidy(ctx, rec, result)
    if error is not None:
        result.state, result.reason = "failed", error
    elif not result.steps:
        result.state = "already"
    return result
