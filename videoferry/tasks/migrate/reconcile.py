"""Reconcile: the look-ups and adoption of a lost create answer's video (only what is provably ours)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from videoferry.connectors.errors import (
    ClientError,
    NotFoundError,
    RateLimitedError,
    VideoApiError,
    stops_run,
)
from videoferry.connectors.models import Video
from videoferry.connectors.retry import describe_failure
from videoferry.core.item import FAILED_STATUSES, ItemState
from videoferry.state.errors import LedgerError
from videoferry.state.machine import CREATING, OpStatus
from videoferry.state.models import Item
from videoferry.tasks.exactly_once import Intent, Lookup, NotMade, OpJournal, exactly_once, look_up
from videoferry.tasks.lookup import Postponed, SentCreate, service_bound, settle_start, settled
from videoferry.tasks.migrate.context import MigrateContext, reload

log = logging.getLogger(__name__)


def sent_create(item: Item) -> SentCreate:
    """What the item's create sent, for a lookup."""
    return SentCreate(
        owner=item.key,
        title=item.create_title or item.spec.title,
        parent_id=item.spec.parent_id,
        intent_at=item.created_intent_at,
        size=item.spec.source_size,
    )


def lower_bound(ctx: MigrateContext, item: Item) -> datetime | None:
    """The earliest service-clock creation time the item's video can have (None: no intent recorded)."""
    return service_bound(ctx.client, item.created_intent_at)[0]


def locate(ctx: MigrateContext, item: Item, *, defer: bool = False) -> Video | None:
    """The video a create sent for this item made, if the service shows it; never another item's.

    From the run's shared listing of the item's parent (tasks/shared_listing.py): one listing, reaching down
    to the oldest create still open, settles the lost answers then due. defer: a lost answer just now is
    not listed for before its settle time (a listing kept for the others may show its video already:
    SharedListings.seen); the item is parked until then (tasks/migrate/parked.py) and looked up again, or
    once before it, when the schedule took it for an early look (Parked.looks_early): that listing can
    show "there", and None from it is not believed (the caller's settle time has not passed).
    """
    sent = sent_create(item)
    after = None
    if defer and sent.intent_at is not None and not settled(sent):
        seen = ctx.listings.seen(ctx.client, sent, ctx.ledger.keys_for_videos)
        if seen is not None:
            return seen  # a listing kept for the others, taken after this intent, shows its video already
        if not ctx.parked.looks_early(item.key):
            why = "reconcile postponed: looked up after the settle time, by one listing for those then due"
            ctx.ledger.note(item.key, ctx.run_id, why)
            return None  # "not there" is not believed yet: looked up once its settle time has passed
        after = settle_start(sent.owner, sent.intent_at)  # an early look: a listing taken after the loss
    parent = item.spec.parent_id
    scope = ctx.scopes.get(parent) if parent else None
    opened = [i.created_intent_at for i in ctx.ledger.items([CREATING]) if i.created_intent_at is not None]
    return ctx.listings.find(
        ctx.client,
        sent,
        ctx.ledger.keys_for_videos,
        scope=(scope, parent) if scope and parent else None,
        reach=min(opened, default=None),
        after=after,
    )


def item_lookup(ctx: MigrateContext, key: str, what: str = "reconcile") -> Lookup[Video]:
    """How an item's create is looked up when its answer was lost (tasks/exactly_once.py): locate(), the
    item as the ledger has it now; a failed listing postpones, journalled as "<what> postponed: ..." (an auth
    error stops the run instead)."""

    def find(_intent: Intent) -> Video | None:
        item = reload(ctx, key)
        try:
            return locate(ctx, item, defer=what == "reconcile")
        except VideoApiError as exc:
            if stops_run(exc):
                ctx.stop(exc)
            else:
                why = describe_failure(exc)
                log.warning("item %s: %s listing failed (%s); left for later", key, what, why)
                ctx.ledger.note(key, ctx.run_id, f"{what} postponed: {exc}")
            raise Postponed(key) from None

    return Lookup(find, absent="")


def create_intent(item: Item) -> Intent:
    """The intent of the item's create, as the ledger recorded it (the item is in creating)."""
    return Intent(item.key, item.created_intent_at)


def adopt_found(ctx: MigrateContext, item: Item, match: Video) -> None:
    """The video a lost create answer made, found: adopted (its status tells the item's state).

    A found video that our own broken transfer left in error/aborted (a cut single upload) is deleted and the
    item planned again; a tus video that never got its bytes gets a new upload address when its upload is
    due (new_upload_address: one replace init; else deleted and created again).
    """
    status = match.status or "pending"
    if status in FAILED_STATUSES:
        if delete_video(ctx, item, match.id):
            why = f"its video {match.id} was in status {status} (a broken transfer): deleted"
            ctx.ledger.reconcile_none(item.key, ctx.run_id, why)
        return
    ctx.ledger.adopt(item.key, ctx.run_id, match.id, status)


#: The ops kind of a video migrate deletes (state/machine.OP_KINDS; op_key delete:<item key>:<video id>).
DELETE_KIND = "delete"


def delete_video(ctx: MigrateContext, item: Item, video_id: str) -> bool:
    """Delete a video of this item exactly once (tasks/exactly_once.py, op_key delete:<item>:<video>); gone
    already counts (a 404, on the call or on the GET that looks a lost answer up, is done). False when the
    service refused, or a lost answer's video is still there (the item failed; a rerun deletes it again).

    An item failed here keeps the video's id (recorded if it had none): a requeue of a failed item without a
    video id plans a new create, which would leave this video beside the new one.
    """
    journal: OpJournal[dict[str, Any]] = OpJournal(
        ctx.ledger,
        ctx.run_id,
        f"delete:{item.key}:{video_id}",
        DELETE_KIND,
        {"video_id": video_id},
        owner_key=item.key,
        video_id=video_id,
    )

    def call() -> dict[str, Any]:
        try:
            ctx.client.videos.delete(video_id)
        except NotFoundError:
            return {"deleted": True, "found_gone": True}
        return {"deleted": True}

    def gone(_intent: Intent) -> dict[str, Any] | None:
        try:
            ctx.client.videos.get(video_id)
        except NotFoundError:
            return {"deleted": True, "found_gone": True}
        return None

    lookup = Lookup(gone, listing=False, absent="the video is still there: its delete did nothing")
    try:
        exactly_once(journal, call, lookup=lookup)
        ctx.listings.forget(video_id)
    except (VideoApiError, NotMade) as exc:
        refusal = exc.unknown if isinstance(exc, NotMade) else exc
        if stops_run(refusal):
            ctx.stop(refusal)
        else:
            if reload(ctx, item.key).video_id is None:
                try:
                    ctx.ledger.set_video_id(item.key, ctx.run_id, video_id)
                except LedgerError:  # another item owns it: not this item's to keep
                    log.warning("item %s: video %s belongs to another item", item.key, video_id)
            why = f"could not delete video {video_id}: {refusal}"
            ctx.ledger.fail(item.key, ctx.run_id, refusal.code or "delete", why)
        return False
    return True


def claim_video(ctx: MigrateContext, item: Item, *, wait: bool = True) -> str | None:
    """The item's video id, found by listing and recorded when its init named only an upload session.

    None only when the item made no create, or its create made no video the service shows once the listing
    had time to show it. Whatever may delete the video, fail the item (a failed item without a video id is
    requeued to planned: a new create) or create again asks this first. A lookup that cannot decide (the
    listing failed, several candidates, too early to say "none") raises Postponed; with wait, a lookup only
    too early waits (abort-aware) until the listing can show the video, then looks once more.
    """
    if item.video_id is not None or item.created_intent_at is None:
        return item.video_id
    found = look_up(
        item_lookup(ctx, item.key, "video lookup"), create_intent(item), wait=wait, stop=ctx.abort
    )
    if found is None:
        return None
    try:
        ctx.ledger.set_video_id(item.key, ctx.run_id, found.id)
    except LedgerError:  # another item took it, or this one learned another id meanwhile: look again later
        raise Postponed(item.key) from None
    return found.id


#: The ops kind of a new upload session for a found video (state/machine.OP_KINDS; op_key reinit:<key>:<id>).
REINIT_KIND = "reinit"

def new_upload_address(ctx: MigrateContext, item: Item, filesize: int, filename: str | None) -> Item | None:
    """A tus item whose video was found without its upload address (the init answer was lost): one init of
    type replace on that video (spec 4.2) gives a new address, instead of a delete and a new create; the
    item as it is now, with that address. The video stays the item's one video.

    The replace init makes no video (its session only replaces the bytes of the video it names once they
    all arrive), so it is repeatable: journalled (tasks/exactly_once.py, no lookup) and, its answer lost
    or 5xx, sent again by the transport's retries with backoff (connectors/client/uploads.py). Refused (a
    4xx: a service that does not take replace on a video still waiting for its bytes; remembered for the
    run) or lost after every retry: the path before, the video deleted and the item planned again
    (replace_empty_video). A video id not known yet is looked up
    first (claim_video; Postponed).
    """
    video_id = claim_video(ctx, item)
    if video_id is None or ctx.reinit_refused:
        replace_empty_video(ctx, reload(ctx, item.key), "init answer lost")
        return None
    journal: OpJournal[Any] = OpJournal(
        ctx.ledger,
        ctx.run_id,
        f"reinit:{item.key}:{video_id}",
        REINIT_KIND,
        {"video_id": video_id},
        owner_key=item.key,
        video_id=video_id,
        outcome=lambda session: ({"session_id": session.id}, None),
    )

    def call() -> Any:
        return ctx.client.uploads.init_replace(video_id=video_id, filesize=filesize, filename=filename)

    try:
        session = exactly_once(journal, call)
    except VideoApiError as exc:
        if stops_run(exc):
            ctx.stop(exc)
            return None
        if isinstance(exc, ClientError) and not isinstance(exc, RateLimitedError):
            ctx.reinit_refused = True
        why = f"init answer lost; a replace session was not given ({describe_failure(exc)})"
        replace_empty_video(ctx, reload(ctx, item.key), why)
        return None
    ctx.ledger.new_upload_address(item.key, ctx.run_id, session.endpoint, filesize)
    ctx.fresh_uploads.add(item.key)
    return reload(ctx, item.key)


def replace_empty_video(ctx: MigrateContext, item: Item, why: str) -> None:
    """Delete an item's video whose bytes cannot be completed, then plan the item again (a new create).

    For a tus item whose init answer (and endpoint) was lost, whose upload address stopped working, or whose
    source changed since its upload began. Nobody else can complete that video, so the item still ends with
    exactly one video. A video id not known yet (init named a session) is looked up and recorded first; a
    lookup that cannot decide leaves the item as it is (Postponed): nothing is created beside a video that
    may exist.
    """
    video_id = claim_video(ctx, item)
    if video_id is not None and not delete_video(ctx, reload(ctx, item.key), video_id):
        return
    ctx.ledger.restart(item.key, ctx.run_id, f"{why}; the unfinished video was deleted")


def retry_service_errors(ctx: MigrateContext) -> int:
    """--retry-errors: delete the video of every item the service ended in error/aborted, plan it again."""
    done = 0
    for item in ctx.ledger.items([ItemState.ERROR, ItemState.ABORTED]):
        if ctx.abort.is_set():
            break
        try:
            video_id = claim_video(ctx, item)
        except Postponed:
            continue  # its video may exist and was not found: not created again this run
        if video_id is None or delete_video(ctx, reload(ctx, item.key), video_id):
            why = f"--retry-errors: the video in status {item.state} was deleted"
            ctx.ledger.restart(item.key, ctx.run_id, why)
            done += 1
    return done


def delete_again(ctx: MigrateContext) -> int:
    """Items requeued after a run that could not delete a video of theirs it had to delete (delete_video: a
    cut single upload left in error, a tus video without bytes, a changed source; it kept the video's id, so
    the requeue watches it as processing): the delete is sent again and, once it went through, the item is
    planned anew; refused again, it fails again. A plain rerun so finishes them, without --retry-errors."""
    done = 0
    refused = ctx.ledger.ops(kind=DELETE_KIND, status=OpStatus.FAILED)
    refused += ctx.ledger.ops(kind=DELETE_KIND, status=OpStatus.VOID)  # a lost answer, the video still there
    for op in refused:
        if ctx.abort.is_set():
            break
        item = ctx.ledger.get(op.owner_key) if op.owner_key else None
        video_id = op.video_id
        if item is None or video_id is None or item.video_id != video_id:
            continue  # deleted since: nothing owed
        if item.state != ItemState.PROCESSING:
            continue  # not requeued by this run
        if delete_video(ctx, item, video_id):
            why = f"its video {video_id}, which an earlier run could not delete, was deleted"
            ctx.ledger.restart(item.key, ctx.run_id, why)
            done += 1
    return done
