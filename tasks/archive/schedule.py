"""An archive run over events: which recordings to archive next (threads), then each event's manifest."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from connectors.client.live_models import LiveEvent
from connectors.errors import VideoApiError, stops_run
from state.machine import OpStatus
from state.reader import LedgerReader
from tasks.archive.events import Recording, event_recordings
from tasks.archive.files import write_manifest
from tasks.archive.recording import ArchiveContext, RecordingResult, archive_recording, op_key
from tasks.copying.steps import STOPPED, each_item
from tasks.exactly_once import OpJournal, exactly_once

__all__ = ["archive_events", "manifest_rows", "RESULT_STATES"]

#: What writing a manifest can fail with (the destination: S3 or disk).
MANIFEST_ERRORS = (OSError, BotoCoreError, ClientError)
#: States of a recording in a run's results.
RESULT_STATES = ("archived", "already", "pending", "skipped", "failed", STOPPED)


def manifest_rows(reader: LedgerReader, event_id: str) -> list[dict[str, Any]]:
    """One row per recording of the event whose copy is verified, from the ledger (every run so far)."""
    rows = []
    for op in reader.ops(kind="archive", status=OpStatus.DONE):
        if not (op.op_key or "").endswith(":copy") or not isinstance(op.result, dict):
            continue
        if op.result.get("event_id") != event_id:
            continue
        row = dict(op.result)
        sidecars = reader.ops(op_key=op_key(str(row.get("video_id")), "sidecars"), status=OpStatus.DONE)
        side = sidecars[-1].result if sidecars and isinstance(sidecars[-1].result, dict) else {}
        row["chat_keys"] = ",".join(side.get("chat_keys") or [])
        row["qos_keys"] = ",".join(side.get("qos_keys") or [])
        rows.append(row)
    rows.sort(key=lambda r: (str(r.get("stream_id")), str(r.get("video_id"))))
    return rows


def archive_events(
    ctx: ArchiveContext,
    events: Iterable[LiveEvent],
    *,
    transfers: int = 2,
    since: datetime | None = None,
) -> list[RecordingResult]:
    """Archive every recording of every event; an event's manifest is rewritten once its recordings ran.

    A refusal of the token or the workspace (connectors.errors.stops_run) stops the run: the recording that
    met it and those not started yet are `stopped`, no further event is read (its manifest is still written
    from what is archived)."""
    results: list[RecordingResult] = []

    def stopped(rec: Recording, why: str) -> RecordingResult:
        return RecordingResult(rec.event_id, rec.stream_id, rec.video_id, STOPPED, why)

    one = each_item(ctx.stop, lambda rec: archive_recording(ctx, rec), stopped)
    with ThreadPoolExecutor(max_workers=max(1, transfers), thread_name_prefix="archive") as pool:
        for event in events:
            if ctx.stop.is_set():
                break
            try:
                recordings = list(event_recordings(ctx.client, event, since))
            except VideoApiError as exc:  # this event's listing failed: the other events still run
                if stops_run(exc):
                    ctx.stop(exc)
                    break
                results.append(RecordingResult(event.id, "", "", "failed", f"listing recordings: {exc}"))
                continue
            done = list(pool.map(one, recordings))
            results += done
            error = _manifest(ctx, event.id)
            if error is not None:
                results.append(RecordingResult(event.id, "", "", "failed", error))
    return results


def _manifest(ctx: ArchiveContext, event_id: str) -> str | None:
    """Rewrite the event's manifest when its archived recordings changed (op archive:<event_id>:manifest).

    Returns the error of a failed write (the event's recordings stay archived; the next run writes it).
    """
    rows = manifest_rows(ctx.ledger, event_id)
    if not rows:
        return None
    videos = sorted(str(r.get("video_id")) for r in rows)
    key = f"archive:{event_id}:manifest"
    last = ctx.ledger.ops(op_key=key)
    if last and last[-1].status == OpStatus.DONE and isinstance(last[-1].result, dict):
        if last[-1].result.get("video_ids") == videos:
            return None

    # A crash while writing left an intent open: writing the manifest again is harmless (no lookup).
    def write() -> list[str]:
        return write_manifest(ctx.dest, event_id, rows, ctx.now())

    journal: OpJournal[list[str]] = OpJournal(
        ctx.ledger,
        ctx.run_id,
        key,
        "archive",
        {"recordings": len(videos)},
        target=("live_event", event_id),
        outcome=lambda keys: ({"video_ids": videos, "keys": keys}, None),
    )
    try:
        exactly_once(journal, write, refused=MANIFEST_ERRORS)
    except MANIFEST_ERRORS as exc:
        return f"manifest: {exc}"
    return None
