"""Creating an item's video exactly once (tasks/exactly_once.py, gap step first): by tus, URL or single."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from videoferry.connectors.config import ConfigError
from videoferry.connectors.errors import FolderNotFoundError, NotFoundError, VideoApiError
from videoferry.connectors.ids import same_id
from videoferry.connectors.retry import describe_failure
from videoferry.connectors.s3 import parse_s3_uri, presign_get, shared_s3_client
from videoferry.connectors.sources import ByteSource
from videoferry.connectors.titles import header_exact
from videoferry.core.item import SourceKind, Via
from videoferry.core.tidy import same_title
from videoferry.state.errors import LedgerError
from videoferry.state.machine import UPLOADED, UPLOADING
from videoferry.state.models import Item
from videoferry.tasks.exactly_once import NotMade, exactly_once
from videoferry.tasks.gap import GapAmbiguous
from videoferry.tasks.migrate.context import MigrateContext, reload, scope_of
from videoferry.tasks.migrate.create_journal import CreateJournal
from videoferry.tasks.migrate.gap import gap_ambiguous, gap_check
from videoferry.tasks.migrate.init_ids import Unconfirmed
from videoferry.tasks.migrate.item_failure import api_failure, fail_item
from videoferry.tasks.migrate.platform_source import journal_file_origin, resolve_link
from videoferry.tasks.migrate.reconcile import item_lookup
from videoferry.tasks.migrate.titles import create_title
from videoferry.tasks.migrate.upload import open_bytes

log = logging.getLogger(__name__)


#: How a video id recorded once the run's probe said init answers name videos is told in the journal.
PROBED = "named by its init answer (init answers name videos: learned by the run's probe)"
#: error.code of a create whose parent_id the service does not know (spec section 7).
PARENT_REFUSED_CODE = 400236


def learn_init_ids(ctx: MigrateContext, key: str, init_id: str, sent_title: str, parent: str) -> None:
    """After an init answer recorded without a video id (the verdict not known yet): learn what init ids
    name, or leave that to the create probing now (tasks/migrate/init_ids.py: nobody waits for it).

    Learned once per run with one GET of an init answer's id (spec 2.14 calls the answer a session): a 404
    means init ids are not video ids, and every item's video is then found by listing after its upload; a
    video means they are, and the answers recorded meanwhile get their ids. The video that GET shows also
    tells how its parent is listed (context.scope_of), which the first listing would otherwise spend a GET
    of its own on. A GET that fails leaves the verdict to the next create's probe.
    """
    mine = Unconfirmed(key, init_id, reload(ctx, key).created_intent_at)
    verdict, probe = ctx.init_ids.note(mine)
    if verdict:  # settled since this answer was recorded
        _confirm(ctx, [mine])
    if not probe:
        return
    started = time.monotonic()
    learned: bool | None = None
    try:
        video = ctx.client.videos.get(init_id)
        learned = video.title is None or same_title(sent_title, video.title)
        if learned and parent and parent not in ctx.scopes:
            ctx.scopes[parent] = scope_of(parent, video)
    except NotFoundError:
        learned = False
    except VideoApiError as exc:
        log.warning("could not learn what init ids name (%s); listing instead", describe_failure(exc))
    finally:
        _confirm(ctx, ctx.init_ids.settle(learned))
    if learned is not None:
        log.info(
            "init answers name %s (learned in %.2f s)",
            "the video" if learned else "an upload session; videos are found by listing",
            time.monotonic() - started,
        )


def _confirm(ctx: MigrateContext, answers: list[Unconfirmed]) -> None:
    """Record each answer's init id as its item's video (init ids name videos), unless the item has moved
    on since (another create, a video found by listing, past uploading)."""
    for answer in answers:
        item = ctx.ledger.get(answer.key)
        if item is None or item.video_id is not None or item.created_intent_at != answer.intent_at:
            continue
        if item.state not in (UPLOADING, UPLOADED):
            continue
        try:
            ctx.ledger.set_video_id(answer.key, ctx.run_id, answer.init_id, PROBED)
        except LedgerError:  # another item holds that id: this one's video is found by listing
            log.warning("item %s: its init id is another item's video; found by listing", answer.key)


def create_item(ctx: MigrateContext, item: Item) -> None:
    """Create the item's video by its upload mode, writing the intent before the call."""
    mode = item.spec.via
    title = create_title(ctx, item, mode)
    refused = ctx.refused_parents.get(item.spec.parent_id or "")
    if refused is not None:
        fail_item(ctx, item, PARENT_REFUSED_CODE, f"{refused} (refused earlier in this run; not sent again)")
        return
    if mode is Via.URL:
        _create_by_url(ctx, item, title)
        return
    if item.spec.source_kind is not SourceKind.PLATFORM:
        journal_file_origin(ctx, item)  # a Takeout's file: where it came from (nothing for others)
    source = open_bytes(ctx, item)
    if source is None:
        return
    if mode is Via.SINGLE:
        _create_single(ctx, item, title, source)
    else:
        _create_tus(ctx, item, title, source)


def _create(
    ctx: MigrateContext,
    item: Item,
    sent_title: str,
    sent_description: str | None,
    call: Callable[[], Any],
    accepted: Callable[[Any], None],
    source: ByteSource | None = None,
) -> None:
    """The item's create, exactly once (tasks/exactly_once.py): an item not looked up across the replication
    gap yet is looked up first (tasks/migrate/gap.gap_check: found, adopted; several candidates, failed
    naming them); a refusal fails the item, a refused parent fails every later item under it (and the run,
    when it is --parent-id)."""
    journal = CreateJournal(ctx, item, sent_title, sent_description, source, accepted)
    try:
        exactly_once(journal, call, lookup=item_lookup(ctx, item.key), gap=gap_check(ctx, item, journal))
    except GapAmbiguous:  # the ledger may have missed its create, and several videos could be it
        gap_ambiguous(ctx, item)
    except NotMade:
        log.info("item %s: its lost create made no video; creating it again", item.key)
    except FolderNotFoundError as exc:  # the parent is unknown to this token: every item under it would fail
        reason = (
            f"parent_id {item.spec.parent_id} does not exist or belongs to another workspace (check"
            " --parent-id or the row's parent_id, or use a token of the workspace that owns it)"
        )
        ctx.refused_parents[item.spec.parent_id or ""] = reason
        fail_item(ctx, reload(ctx, item.key), exc.code or 400236, f"{reason}: {exc}", exc.request_id)
        if same_id(item.spec.parent_id, ctx.default_parent_id):
            ctx.stop(
                ConfigError(
                    f"--parent-id {ctx.default_parent_id} was refused (code {exc.code}): it does not exist or"
                    " belongs to another workspace; check --parent-id, or set VIDEOFERRY_TOKEN to a token of"
                    " the workspace that owns it"
                )
            )
    except VideoApiError as exc:  # a definitive refusal: nothing was created
        api_failure(ctx, reload(ctx, item.key), exc)


def _create_tus(ctx: MigrateContext, item: Item, title: str, source: ByteSource) -> None:
    def started(session: Any) -> None:
        # The outcome right after the answer; a video id only once a probe has said init ids are videos.
        known = ctx.init_ids.is_video
        video_id = session.id if known else None
        ctx.ledger.create_started_upload(item.key, ctx.run_id, video_id, session.endpoint, source.size)
        ctx.fresh_uploads.add(item.key)
        if known is None:
            learn_init_ids(ctx, item.key, session.id, title, item.spec.parent_id or "")

    _create(
        ctx,
        item,
        title,
        item.spec.description,
        lambda: ctx.client.uploads.create_video(
            parent_id=item.spec.parent_id or "",
            title=title,
            filesize=source.size,
            filename=source.name,
            description=item.spec.description,
        ),
        started,
        source,
    )


def _header_description(description: str | None) -> str | None:
    return description if description and header_exact(description) else None


def _create_by_url(ctx: MigrateContext, item: Item, title: str) -> None:
    kind = item.spec.source_kind
    if kind is SourceKind.URL:
        url = item.spec.source
    elif kind is SourceKind.S3:
        try:
            bucket, key = parse_s3_uri(item.spec.source)
            url = presign_get(shared_s3_client(ctx.s3), bucket, key)
        except Exception as exc:  # boto raises many shapes; the message never holds the presigned URL
            fail_item(ctx, item, "source", f"cannot presign {item.spec.source}: {type(exc).__name__}")
            return
    elif kind is SourceKind.PLATFORM:  # resolved now, as its create is due: a link listed earlier may expire
        link = resolve_link(ctx, item)
        if link is None:
            return
        url = link.url
    else:
        fail_item(ctx, item, "source", "a local file cannot be imported by URL")
        return
    name = (
        None
        if kind is SourceKind.PLATFORM
        else item.spec.source.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or None
    )
    _create(
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
        lambda video: ctx.ledger.create_accepted(item.key, ctx.run_id, video.id, status=video.status),
    )


def _create_single(ctx: MigrateContext, item: Item, title: str, source: ByteSource) -> None:
    def accepted(video: Any) -> None:
        ctx.progress.add_bytes(source.size)
        ctx.ledger.create_accepted(item.key, ctx.run_id, video.id, status=video.status)

    _create(
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
        accepted,
        source,
    )
