"""Sending an item's bytes by tus, resumed from the server's offset; an address gone, a source changed."""

from __future__ import annotations

import logging
import time

from videoferry.connectors.errors import (
    NotFoundError,
    VideoApiError,
)
from videoferry.connectors.sources import ByteSource, SourceError, open_source, source_version
from videoferry.connectors.tus import TusEndpointGoneError, TusError
from videoferry.core.item import WAITING_FOR_BYTES, SourceKind
from videoferry.state.errors import InvalidTransition
from videoferry.state.machine import UPLOADING
from videoferry.state.models import Item
from videoferry.tasks.migrate.context import MigrateContext, reload
from videoferry.tasks.migrate.item_failure import api_failure, fail_item
from videoferry.tasks.migrate.platform_source import open_link_source
from videoferry.tasks.migrate.reconcile import claim_video, new_upload_address, replace_empty_video
from videoferry.tasks.stop import UploadStopped

log = logging.getLogger(__name__)


#: How often an upload's acknowledged offset is written to the ledger.
OFFSET_SAVE_SECONDS = 1.0


def open_bytes(ctx: MigrateContext, item: Item) -> ByteSource | None:
    """The item's bytes, opened; None when the source cannot be read (the item failed, saying why, or a
    platform's failure stopped the run: tasks/migrate/platform_source.py)."""
    if item.spec.source_kind is SourceKind.PLATFORM:  # read through a link resolved now
        return open_link_source(ctx, item)
    try:
        return open_source(item.spec.source, s3=ctx.s3)
    except SourceError as exc:
        fail_item(ctx, item, "source", str(exc))
        return None


def upload_item(ctx: MigrateContext, item: Item) -> None:
    """Send the item's bytes to its tus endpoint, resuming from the server's offset."""
    # Only the first upload right after this run's own init: a rerun, a retry or a resume HEADs first.
    fresh = item.key in ctx.fresh_uploads and not item.upload_offset
    ctx.fresh_uploads.discard(item.key)
    source = open_bytes(ctx, item)
    if source is None:
        return
    if not item.upload_endpoint:  # the init answer was lost: a new address for the found video
        reinit = new_upload_address(ctx, item, source.size, source.name)
        if reinit is None:
            return
        item, fresh = reinit, True
    endpoint = item.upload_endpoint
    if endpoint is None:
        raise AssertionError(f"item {item.key}: no upload address after a new one was given")
    current = source_version(source)
    if item.source_version and current and current != item.source_version:
        # The service holds bytes of the old version: resuming would mix both. Start over with the new one.
        ctx.ledger.note(item.key, ctx.run_id, "the source changed since its upload began; uploading it again")
        replace_empty_video(ctx, item, "the source changed since its upload began")
        return
    last = [item.upload_offset]
    saved = [0.0]
    moved_on = [False]

    def on_progress(offset: int) -> None:
        if ctx.abort.is_set():  # the run stops (Ctrl-C, a refused token): no next chunk; a rerun resumes
            raise UploadStopped(item.key)  # from the server's offset (the ledger's is only a hint)
        if offset > last[0]:
            ctx.progress.add_bytes(offset - last[0])
        last[0] = offset
        # The offset is only a hint (a resume asks the server with HEAD), so it is saved at most once per
        # OFFSET_SAVE_SECONDS rather than a synced commit per chunk; the last one is always saved.
        now = time.monotonic()
        if moved_on[0]:
            return
        if now - saved[0] >= OFFSET_SAVE_SECONDS or (item.bytes_total and offset >= item.bytes_total):
            saved[0] = now
            try:
                ctx.ledger.record_offset(item.key, offset)
            except InvalidTransition:  # a webhook already moved the item on: the service has every byte
                moved_on[0] = True

    try:
        if ctx.bytes_plane is not None and item.spec.source_kind is not SourceKind.PLATFORM:
            # a worker sends the bytes; the coordinator learns the end (a platform video's link is read here)
            on_progress(
                ctx.bytes_plane.push(
                    endpoint,
                    item.spec.source,
                    source.size,
                    ctx.chunk_size,
                    ctx.s3,
                    outage=ctx.client.transport.silence.bound,
                    guard=ctx.client.transport.guard_send,
                    window=ctx.client.transport.send_window,
                )
            )
        else:
            ctx.tus.upload(
                endpoint,
                source,
                chunk_size=ctx.chunk_size,
                on_progress=on_progress,
                offset=item.upload_offset,
                fresh_filesize=item.bytes_total if fresh else None,
            )
    except UploadStopped:
        return  # left uploading: the next run asks the server for its offset and sends the rest
    except TusEndpointGoneError as exc:
        _endpoint_gone(ctx, item, exc.status)
        return
    except TusError as exc:
        fail_item(ctx, item, f"tus_{exc.status}" if exc.status else "tus", str(exc))
        return
    except SourceError as exc:
        fail_item(ctx, item, "source", str(exc))
        return
    try:
        ctx.ledger.upload_complete(item.key, ctx.run_id)
    except InvalidTransition:
        # A webhook already moved the item on (the service finished processing before we recorded the
        # last chunk): the upload is complete either way.
        if reload(ctx, item.key).state == UPLOADING:
            raise


def _endpoint_gone(ctx: MigrateContext, item: Item, status: int | None) -> None:
    """The upload address stopped answering (404/410: it expired). Finish, or start the video over.

    When the service already has every byte (the video is past uploading) the upload is complete; otherwise
    the unfinished video is deleted and the item planned again: a new init gives a new address (chosen over a
    `type: replace` session, whose parameters the spec does not show). A video id not known yet (init named a
    session) is looked up and recorded first.
    """
    video_id = claim_video(ctx, item)
    if video_id is not None:
        item = reload(ctx, item.key)
        try:
            video = ctx.client.videos.get(video_id)
        except NotFoundError:
            video = None
        except VideoApiError as exc:
            api_failure(ctx, item, exc)
            return
        if video is not None and video.status not in (None, *WAITING_FOR_BYTES):
            ctx.ledger.upload_complete(item.key, ctx.run_id)
            return
    ctx.ledger.note(item.key, ctx.run_id, f"upload address gone (tus {status}); creating the video again")
    replace_empty_video(ctx, reload(ctx, item.key), f"upload address gone (tus {status})")
