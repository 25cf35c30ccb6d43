"""Apply across the replication gap: which units are gap subjects, and how a copy's or concat's result is
found in the run's one listing (tasks/gap.py) before it is made; calls that change a video in place make
their intent durable (in S3) before the call, so the gap never hides them.

A copy / concat result is a new video with the source's title in the copy's destination (or the source's
place): the same SentCreate the lookup after a lost answer uses (tasks/apply/calls.reconcile), bounded by the
gap mark (tasks/gap_mark.py) instead of an intent, and never one of the call's own sources (a result looks
like its source: same title, same place). The look-up is the step before the unit's intent in its
exactly-once sequence (gap_check(), tasks/exactly_once.adopt_across_gap): found, the unit's op is written as
done with it (intent, then found) and the unit moves on as after its call. A cut, a replace and a concat into
the same video (replace) are recognised only by the video's snapshot, which a lost intent would take with
it: their intent is pushed to S3 before the call (Run.durable) and a rerun settles them as any open intent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from connectors.errors import NotFoundError
from core.operation import ConcatParams, OperationSpec, OpKind
from state.applied import UNIT_OWNER
from state.machine import UnitState
from tasks.apply.calls import Called, VideoMissing, before_of, result_parent, result_title
from tasks.apply.context import ApplyContext
from tasks.exactly_once import GapCheck
from tasks.lookup import SentCreate

if TYPE_CHECKING:
    from state.ledger import Ledger

log = logging.getLogger(__name__)

#: Kinds whose result the gap lookup finds by listing (a concat into the same video excepted).
LISTED_KINDS = frozenset({OpKind.COPY, OpKind.CONCAT})
#: Kinds that change a video in place (their intent made durable before the call on a remote ledger).
IN_PLACE_KINDS = frozenset({OpKind.CUT, OpKind.REPLACE})


def in_place(spec: OperationSpec) -> bool:
    """Whether the unit's call changes its video in place (a cut, a replace, a concat with replace)."""
    if spec.kind in IN_PLACE_KINDS:
        return True
    return isinstance(spec.params, ConcatParams) and spec.params.replace


def gap_subjects(ledger: Ledger) -> Iterable[str]:
    """Apply's gap subjects: the copy / concat units not done (cuts and replaces write their intent durably
    first instead, so they are never in the gap); their unit keys."""
    listed = {kind.value for kind in LISTED_KINDS}
    return [u.unit_key for u in ledger.units() if u.kind in listed and u.state != UnitState.DONE]


def gap_check(
    ctx: ApplyContext, key: str, spec: OperationSpec, video_id: str, others: dict[str, str]
) -> GapCheck[Called] | None:
    """How the unit's result is found across the gap (None: no gap). others: the prepend / append sources
    (their ids), never taken for the result, nor video_id. A unit whose call is in place or repeatable has
    nothing to list. The look-up and its record hold the result's (parent, title) lock: one step against
    other units' lookups; VideoMissing when video_id does not exist."""
    gap = ctx.gap
    if gap is None:
        return None
    if spec.kind not in LISTED_KINDS or in_place(spec):
        return GapCheck(gap, key, None)  # nothing to list: in place calls are durable, edits repeatable
    sent: list[SentCreate] = []

    @contextmanager
    def hold() -> Iterator[None]:
        try:
            before = before_of(ctx, spec, video_id) or {}
        except NotFoundError:
            raise VideoMissing(video_id) from None
        title, parent = result_title(spec, before), result_parent(spec, before)
        sent.append(SentCreate(owner=UNIT_OWNER + key, title=title, parent_id=parent, intent_at=gap.since))
        with ctx.create_lock(parent, title):
            yield

    def find() -> Called | None:
        sources = {video_id, *others.values()}
        found = gap.created(ctx.client, sent, ctx.ledger.video_owners, sources)
        if found is None:
            return None
        log.info("unit %s: its result %s found across the replication gap", key, found.id)
        return Called(found, True, f"{spec.kind.value} made a video (found across the replication gap)")

    return GapCheck(gap, key, find, hold)
