"""Migrate across the replication gap: an item the restored ledger does not show settled is looked up (the
run's one listing, tasks/gap.py) under every title its create can have been sent with, before it is created.

A run whose remote ledger may be behind first sweeps the items in planned and failed without a video: a
video found is adopted as a lost create answer is (begin_create, then reconcile.adopt_found); then, during
the run, any item about to be created that was not looked up yet (one a restart put back to planned, one
whose create intent was settled as "nothing found") is looked up the same way.
"""

from __future__ import annotations

import logging

from connectors.errors import VideoApiError, stops_run
from connectors.models import Video
from connectors.titles import header_safe_title, placeholder_title
from state.errors import LedgerError
from state.machine import FAILED, PLANNED
from state.models import Item
from tasks.gap import GapListingFailed
from tasks.lookup import Postponed, SentCreate
from tasks.migrate.context import MigrateContext, reload
from tasks.migrate.create import create_title
from tasks.migrate.reconcile import adopt_found

log = logging.getLogger(__name__)

#: error_code of an item several videos of the gap could be (left for a person: nothing is created for it).
GAP_AMBIGUOUS = "gap_ambiguous"


def gap_sents(ctx: MigrateContext, item: Item) -> list[SentCreate]:
    """Every way this item's create can have been sent by a run whose choices are not known: the title its
    create sends now, its placeholder, its header-safe form, and its real title (a finish step may have set
    it since), in that order (the unique ones first)."""
    titles = [
        placeholder_title(item.key),
        create_title(ctx, item, item.spec.via),
        header_safe_title(item.spec.title, item.key)[0],
        item.spec.title,
    ]
    since = ctx.gap.since if ctx.gap is not None else None
    return [
        SentCreate(item.key, title, item.spec.parent_id, since, item.spec.source_size)
        for title in dict.fromkeys(titles)
    ]


def look_up_gap(ctx: MigrateContext, item: Item) -> bool:
    """Look the item up across the gap (once per run); True when a video was found and adopted (the item has
    moved on), False when none is there (it may be created). An item several videos could be is failed
    (GAP_AMBIGUOUS, named) and True is returned: nothing is created for it."""
    gap = ctx.gap
    if gap is None or not gap.pending(item.key):
        return False
    try:
        found = gap.find(ctx.client, item.key, gap_sents(ctx, item), ctx.ledger.keys_for_videos)
    except Postponed:
        why = (
            "the ledger may have missed this item's create (replication gap) and several videos could be its"
            " own: check them by hand (delete the ones that are not), then rerun: it is looked up again"
        )
        if item.state == PLANNED:
            ctx.ledger.fail(item.key, ctx.run_id, GAP_AMBIGUOUS, why)
        else:
            ctx.ledger.note(item.key, ctx.run_id, why)
        return True
    if found is None:
        return False
    _adopt(ctx, item, found)
    return True


def _adopt(ctx: MigrateContext, item: Item, video: Video) -> None:
    """Record the found video as the item's, through the ledger's own steps (a failed item requeued first)."""
    if item.state == FAILED:
        ctx.ledger.requeue_failed(ctx.run_id, keys=[item.key])
    ctx.ledger.begin_create(item.key, ctx.run_id, video.title or item.spec.title)
    ctx.ledger.note(item.key, ctx.run_id, f"video {video.id} found by listing across the replication gap")
    log.info("item %s: video %s found across the replication gap", item.key, video.id)
    adopt_found(ctx, reload(ctx, item.key), video)


def sweep_gap(ctx: MigrateContext) -> int:
    """Before any create: list once, then look up every planned item (and every failed one without a video,
    which the requeue at a run's start would create); how many videos were found. A listing that fails stops
    the run (nothing may be created for an item that may have a video)."""
    gap = ctx.gap
    if gap is None:
        return 0
    try:
        gap.listing(ctx.client)
    except GapListingFailed as exc:
        ctx.stop(exc)
        return 0
    except VideoApiError as exc:
        if not stops_run(exc):
            raise
        ctx.stop(exc)
        return 0
    found = 0
    for item in ctx.ledger.items([PLANNED, FAILED]):
        if ctx.abort.is_set():
            break
        if item.state == FAILED and item.video_id:
            continue
        try:
            found += look_up_gap(ctx, item)
        except (LedgerError, VideoApiError) as exc:  # recorded by the next run's sweep: the gap stays open
            log.warning("item %s: the gap lookup could not be recorded (%s)", item.key, exc)
    if found:
        log.warning("replication gap: %d item(s) had a video the restored ledger did not know", found)
    return found
