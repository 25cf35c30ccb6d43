"""Migrate across the replication gap: which items are gap subjects, and how an item's create is found in the
run's one listing (tasks/gap.py) under every title it can have been sent with, before it is created.

The look-up is the step before the create's intent (tasks/exactly_once.adopt_across_gap, with gap_check()):
a video found is adopted as a lost create answer is (its intent, then reconcile.adopt_found). A run whose
remote ledger may be behind first sweeps the items in planned and failed without a video with that step
(sweep_gap); then, during the run, any item about to be created that was not looked up yet (one a restart
put back to planned, one whose create intent was settled as "nothing found") takes it in its create's
exactly-once sequence (tasks/migrate/create.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from connectors.errors import VideoApiError, stops_run
from connectors.models import Video
from connectors.titles import header_safe_title, placeholder_title
from state.errors import LedgerError
from state.machine import CREATING, FAILED, PLANNED
from state.models import Item
from tasks.exactly_once import GapCheck, adopt_across_gap
from tasks.gap import GapAmbiguous, GapListingFailed
from tasks.lookup import SentCreate
from tasks.migrate.context import MigrateContext
from tasks.migrate.create_journal import CreateJournal
from tasks.migrate.titles import create_title

if TYPE_CHECKING:
    from state.ledger import Ledger

log = logging.getLogger(__name__)

#: error_code of an item several videos of the gap could be (left for a person: nothing is created for it).
GAP_AMBIGUOUS = "gap_ambiguous"


def gap_subjects(ledger: Ledger) -> Iterable[str]:
    """Migrate's gap subjects: the items that may hide a create the copy does not know (planned, creating,
    failed without a video); their keys."""
    for item in ledger.items([PLANNED, CREATING, FAILED]):
        if item.state != FAILED or not item.video_id:
            yield item.key


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


def gap_check(ctx: MigrateContext, item: Item, journal: CreateJournal) -> GapCheck[Video] | None:
    """How the item's create is found across the gap (None: no gap): under every title of gap_sents(), never
    a video another item owns; a video found is what the journal adopts (journal.adopting)."""
    gap = ctx.gap
    if gap is None:
        return None

    def find() -> Video | None:
        journal.adopting = gap.created(ctx.client, gap_sents(ctx, item), ctx.ledger.keys_for_videos)
        return journal.adopting

    return GapCheck(gap, item.key, find)


def gap_ambiguous(ctx: MigrateContext, item: Item) -> None:
    """Several videos of the gap could be the item's: a planned item is failed (GAP_AMBIGUOUS, named), any
    other noted; nothing is created for it."""
    why = (
        "the ledger may have missed this item's create (replication gap) and several videos could be its"
        " own: check them by hand (delete the ones that are not), then rerun: it is looked up again"
    )
    if item.state == PLANNED:
        ctx.ledger.fail(item.key, ctx.run_id, GAP_AMBIGUOUS, why)
    else:
        ctx.ledger.note(item.key, ctx.run_id, why)


def look_up_gap(ctx: MigrateContext, item: Item) -> bool:
    """The gap step of the item's create, taken ahead of it (once per run); True when a video was found and
    adopted (the item has moved on), or several could be it (gap_ambiguous): nothing is created for it."""
    journal = CreateJournal(ctx, item)
    try:
        return adopt_across_gap(journal, gap_check(ctx, item, journal)) is not None
    except GapAmbiguous:
        gap_ambiguous(ctx, item)
        return True


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
