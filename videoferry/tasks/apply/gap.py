"""Apply across the replication gap: a copy or concat the restored ledger does not show done is looked up in
the run's one listing (tasks/gap.py) before it is made; calls that change a video in place make their
intent durable (in S3) before the call, so the gap never hides them.

A copy / concat result is a new video with the source's title in the copy's destination (or the source's
place): the same SentCreate the lookup after a lost answer uses (tasks/apply/calls.reconcile), bounded by the
gap mark (tasks/gap_mark.py) instead of an intent, and never one of the call's own sources (a result looks
like its source: same title, same place). Found, the unit's op is written as done with it (intent, then found)
and the unit moves on as after its call. A cut, a replace and a concat into the same video (replace) are
recognised only by the video's snapshot, which a lost intent would take with it: their intent is pushed to S3
before the call (Run.durable) and a rerun settles them as any open intent.
"""

from __future__ import annotations

import logging

from videoferry.core.operation import ConcatParams, OperationSpec, OpKind
from videoferry.state.applied import UNIT_OWNER
from videoferry.tasks.apply.calls import Called, before_of, result_parent, result_title
from videoferry.tasks.apply.context import ApplyContext
from videoferry.tasks.exactly_once import Journal
from videoferry.tasks.lookup import SentCreate

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


def look_up_gap(
    ctx: ApplyContext,
    key: str,
    spec: OperationSpec,
    video_id: str,
    others: dict[str, str],
    journal: Journal[Called],
) -> Called | None:
    """The result of this unit's call made in the gap, if the service shows it (then recorded as the call's
    outcome); None when the unit is no gap subject or nothing is there (it may be called). others: the
    prepend / append sources (their ids), never taken for the result, nor video_id. Run under the
    result's (parent, title) lock: a lookup and its record are one step against other units' lookups."""
    gap = ctx.gap
    if gap is None or not gap.pending(key):
        return None
    if spec.kind not in LISTED_KINDS or in_place(spec):
        gap.mark_looked(key)  # nothing to list: in place calls are durable, edits repeatable
        return None
    before = before_of(ctx, spec, video_id) or {}
    sent = SentCreate(
        owner=UNIT_OWNER + key,
        title=result_title(spec, before),
        parent_id=result_parent(spec, before),
        intent_at=gap.since,
    )
    with ctx.create_lock(sent.parent_id, sent.title):
        sources = {video_id, *others.values()}
        found = gap.find(ctx.client, key, [sent], ctx.ledger.video_owners, sources)
        if found is None:
            return None
        called = Called(found, True, f"{spec.kind.value} made a video (found across the replication gap)")
        intent = journal.write_intent()
        journal.write_found(intent, called)
    log.info("unit %s: its result %s found across the replication gap", key, found.id)
    return called
