"""Per-item transfer: create the video (intent first), upload its bytes, reconcile unknown outcomes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from connectors.errors import (
    AuthError,
    FolderNotFoundError,
    NotFoundError,
    UnknownOutcomeError,
    VideoApiError,
)
from connectors.ids import same_id
from connectors.s3 import parse_s3_uri, presign_get, shared_s3_client
from connectors.sources import ByteSource, SourceError, open_source, source_version
from connectors.titles import header_exact
from connectors.tus import TusEndpointGoneError, TusError
from core.item import WAITING_FOR_BYTES, SourceKind, Via
from state.errors import InvalidTransition, LedgerError
from state.machine import CREATING, FAILED, PLANNED, UPLOADING
from state.models import Item
from tasks.context import RunContext, error_code
from tasks.reconcile import (
    Postponed,
    claim_video,
    create_title,
    learn_init_ids,
    reconcile_item,
    reload,
    replace_empty_video,
)

log = logging.getLogger(__name__)

#: error.code of a create whose parent_id the service does not know (spec section 7).
PARENT_REFUSED_CODE = 400236
#: How often an upload's acknowledged offset is written to the ledger.
OFFSET_SAVE_SECONDS = 1.0


def _fail(ctx: RunContext, item: Item, code: str | int, message: str, request_id: str | None = None) -> None:
    """Fail the item; one whose init named only an upload session gets its video's id recorded first.

    A failed item without a video id is requeued to planned (a new create), so an uploading item's video is
    found by listing before it fails; a lookup that cannot decide leaves it uploading (Postponed) for later.
    """
    current = reload(ctx, item.key)
    if current.state == UPLOADING:
        claim_video(ctx, current)
    ctx.ledger.fail(item.key, ctx.run_id, code, message, request_id=request_id)


def _api_failure(ctx: RunContext, item: Item, exc: VideoApiError) -> None:
    """Record a definitive API refusal; an auth error stops the whole run (it would fail every item)."""
    if isinstance(exc, AuthError):
        ctx.stop(str(exc), config_error=True)
        return
    _fail(ctx, item, error_code(exc), str(exc), exc.request_id)


def transfer_item(ctx: RunContext, key: str) -> str:
    """Bring one item as far as the upload goes (uploaded / processing / failed); returns its state."""
    ledger = ctx.ledger
    item = ledger.get(key)
    if item is None:
        raise LedgerError(f"item {key!r} is not in the ledger")
    while not ctx.abort.is_set():
        if item.state == CREATING:
            reconcile_item(ctx, item)
        elif item.state == PLANNED:
            if ctx.count_create(key) is None:  # counted over the whole run, every reconcile round included
                made = ctx.max_create_attempts
                _fail(ctx, item, "create_attempts", f"no video after {made} create attempts")
            else:
                create_item(ctx, item)
        elif item.state == UPLOADING:
            upload_item(ctx, item)
            current = ledger.get(key)
            assert current is not None
            if current.state == UPLOADING:  # stopped without a verdict (abort): leave it for the next run
                return current.state
        else:
            return item.state
        refreshed = ledger.get(key)
        assert refreshed is not None
        item = refreshed
    return item.state


def _open(ctx: RunContext, item: Item) -> ByteSource | None:
    try:
        return open_source(item.spec.source, s3=ctx.s3)
    except SourceError as exc:
        _fail(ctx, item, "source", str(exc))
        return None


def create_item(ctx: RunContext, item: Item) -> None:
    """Create the item's video by its upload mode, writing the intent before the call."""
    mode = item.spec.via
    title = create_title(ctx, item, mode)
    refused = ctx.refused_parents.get(item.spec.parent_id or "")
    if refused is not None:
        _fail(ctx, item, PARENT_REFUSED_CODE, f"{refused} (refused earlier in this run; not sent again)")
        return
    if mode is Via.URL:
        _create_by_url(ctx, item, title)
        return
    source = _open(ctx, item)
    if source is None:
        return
    if mode is Via.SINGLE:
        _create_single(ctx, item, title, source)
    else:
        _create_tus(ctx, item, title, source)


T = TypeVar("T")


def _guarded_create(
    ctx: RunContext,
    item: Item,
    sent_title: str,
    sent_description: str | None,
    call: Callable[[], T],
    source: ByteSource | None = None,
) -> T | None:
    """Write the create intent, make the call; settle an unknown outcome or a refusal. None: no result."""
    ctx.ledger.begin_create(
        item.key,
        ctx.run_id,
        sent_title,
        create_description=sent_description,
        source_version=source_version(source) if source is not None else None,
    )
    try:
        return call()
    except UnknownOutcomeError:
        log.info("item %s: create outcome unknown; reconciling", item.key)
        reconcile_item(ctx, reload(ctx, item.key))
    except FolderNotFoundError as exc:  # the parent is unknown to this token: every item under it would fail
        ctx.ledger.reconcile_none(item.key, ctx.run_id, f"create refused ({exc.code})")
        reason = (
            f"parent_id {item.spec.parent_id} does not exist or belongs to another workspace (check"
            " --parent-id or the row's parent_id, or use a token of the workspace that owns it)"
        )
        ctx.refused_parents[item.spec.parent_id or ""] = reason
        _fail(ctx, reload(ctx, item.key), exc.code or 400236, f"{reason}: {exc}", exc.request_id)
        if same_id(item.spec.parent_id, ctx.default_parent_id):
            ctx.stop(
                f"--parent-id {ctx.default_parent_id} was refused (code {exc.code}): it does not exist or"
                " belongs to another workspace; check --parent-id, or set VIDEOFERRY_TOKEN to a token of the"
                " workspace that owns it",
                config_error=True,
            )
    except VideoApiError as exc:  # a definitive refusal: nothing was created
        ctx.ledger.reconcile_none(item.key, ctx.run_id, f"create refused ({exc.code})")
        _api_failure(ctx, reload(ctx, item.key), exc)
    return None


def _create_tus(ctx: RunContext, item: Item, title: str, source: ByteSource) -> None:
    session = _guarded_create(
        ctx,
        item,
        title,
        item.spec.description,
        lambda: ctx.client.uploads.init(
            parent_id=item.spec.parent_id or "",
            title=title,
            filesize=source.size,
            filename=source.name,
            description=item.spec.description,
        ),
        source,
    )
    if session is not None:
        video_id = learn_init_ids(ctx, session.id, title)
        ctx.ledger.create_started_upload(item.key, ctx.run_id, video_id, session.endpoint, source.size)


def _header_description(description: str | None) -> str | None:
    return description if description and header_exact(description) else None


def _create_by_url(ctx: RunContext, item: Item, title: str) -> None:
    kind = item.spec.source_kind
    if kind is SourceKind.URL:
        url = item.spec.source
    elif kind is SourceKind.S3:
        try:
            bucket, key = parse_s3_uri(item.spec.source)
            url = presign_get(shared_s3_client(ctx.s3), bucket, key)
        except Exception as exc:  # boto raises many shapes; the message never holds the presigned URL
            _fail(ctx, item, "source", f"cannot presign {item.spec.source}: {type(exc).__name__}")
            return
    else:
        _fail(ctx, item, "source", "a local file cannot be imported by URL")
        return
    name = item.spec.source.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or None
    result = _guarded_create(
        ctx,
        item,
        title,
        _header_description(item.spec.description),
        lambda: ctx.client.uploads.import_url(
            parent_id=item.spec.parent_id or "",
            title=title,
            url=url,
            filename=name,
            description=item.spec.description,
            title_key=item.key,
        ),
    )
    if result is not None:
        ctx.ledger.create_accepted(item.key, ctx.run_id, result.id, status=result.status)


def _create_single(ctx: RunContext, item: Item, title: str, source: ByteSource) -> None:
    result = _guarded_create(
        ctx,
        item,
        title,
        _header_description(item.spec.description),
        lambda: ctx.client.uploads.single(
            parent_id=item.spec.parent_id or "",
            title=title,
            source=source,
            filename=source.name,
            description=item.spec.description,
            title_key=item.key,
        ),
        source,
    )
    if result is not None:
        ctx.progress.add_bytes(source.size)
        ctx.ledger.create_accepted(item.key, ctx.run_id, result.id, status=result.status)


def upload_item(ctx: RunContext, item: Item) -> None:
    """Send the item's bytes to its tus endpoint, resuming from the server's offset."""
    if not item.upload_endpoint:
        replace_empty_video(ctx, item, "init answer lost")
        return
    source = _open(ctx, item)
    if source is None:
        return
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
        if ctx.bytes_plane is not None:  # a worker sends the bytes; the coordinator learns the end
            on_progress(
                ctx.bytes_plane.push(
                    item.upload_endpoint, item.spec.source, source.size, ctx.chunk_size, ctx.s3
                )
            )
        else:
            ctx.tus.upload(
                item.upload_endpoint,
                source,
                chunk_size=ctx.chunk_size,
                on_progress=on_progress,
                offset=item.upload_offset,
            )
    except TusEndpointGoneError as exc:
        _endpoint_gone(ctx, item, exc.status)
        return
    except TusError as exc:
        _fail(ctx, item, f"tus_{exc.status}" if exc.status else "tus", str(exc))
        return
    except SourceError as exc:
        _fail(ctx, item, "source", str(exc))
        return
    try:
        ctx.ledger.upload_complete(item.key, ctx.run_id)
    except InvalidTransition:
        # A webhook already moved the item on (the service finished processing before we recorded the
        # last chunk): the upload is complete either way.
        if reload(ctx, item.key).state == UPLOADING:
            raise


def _endpoint_gone(ctx: RunContext, item: Item, status: int | None) -> None:
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
            _api_failure(ctx, item, exc)
            return
        if video is not None and video.status not in (None, *WAITING_FOR_BYTES):
            ctx.ledger.upload_complete(item.key, ctx.run_id)
            return
    ctx.ledger.note(item.key, ctx.run_id, f"upload address gone (tus {status}); creating the video again")
    replace_empty_video(ctx, reload(ctx, item.key), f"upload address gone (tus {status})")


def transfer_batch(ctx: RunContext, keys: list[str]) -> dict[str, int]:
    """Transfer a batch of items one after another; one item's failure never stops the others."""
    outcome: dict[str, int] = {}
    for key in keys:
        if ctx.abort.is_set():
            break
        try:
            state = transfer_item(ctx, key)
        except Postponed:
            state = CREATING
        except AuthError as exc:
            ctx.stop(str(exc), config_error=True)
            break
        except Exception as exc:  # a surprise in one item is recorded on it; the batch goes on
            log.exception("item %s: transfer crashed", key)
            state = _record_crash(ctx, key, exc)
        outcome[state] = outcome.get(state, 0) + 1
    return outcome


def _record_crash(ctx: RunContext, key: str, exc: Exception) -> str:
    item = ctx.ledger.get(key)
    if item is None or item.state in (FAILED, CREATING):
        return item.state if item is not None else FAILED  # creating is reconciled by the next run
    if item.state == UPLOADING and item.video_id is None:
        # Failed without a video id, the next run would create again beside the video its init made.
        try:
            claim_video(ctx, item)
        except Exception:
            log.warning("item %s: its video could not be looked up; it stays uploading for the next run", key)
            return item.state
    code = exc.code if isinstance(exc, VideoApiError) and exc.code is not None else "internal"
    message = str(exc) if isinstance(exc, VideoApiError) else f"internal error: {type(exc).__name__}"
    try:
        ctx.ledger.fail(key, ctx.run_id, code, message)
    except LedgerError:
        log.exception("item %s: could not record the failure", key)
    return FAILED
