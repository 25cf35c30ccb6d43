"""An item's create journal: its intent and outcome written in the item (tasks/exactly_once.Journal)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from connectors.models import Video
from connectors.sources import ByteSource, source_version
from state.machine import CREATING, FAILED
from state.models import Item
from tasks.exactly_once import Intent, settle
from tasks.migrate.context import MigrateContext, reload
from tasks.migrate.reconcile import adopt_found, create_intent, item_lookup

log = logging.getLogger(__name__)


@dataclass
class CreateJournal:
    """An item's create, written in the item itself (tasks/exactly_once.Journal): the intent is the state
    creating with the title and description sent, the outcome the state the answer (or the lookup) tells.

    accepted(answer): writes what the call answered (an upload session, or the accepted video).
    adopting: the video a lost run's create made, found across the replication gap (tasks/migrate/gap.py sets
    it as it finds it): the intent is then begun under that video's title (a failed item requeued first), and
    the adoption is its outcome.
    """

    ctx: MigrateContext
    item: Item
    title: str = ""
    description: str | None = None
    source: ByteSource | None = None
    accepted: Callable[[Any], None] = lambda _answer: None
    adopting: Video | None = None

    def open_intent(self) -> Intent | None:
        """The create an earlier attempt left in creating."""
        return create_intent(self.item) if self.item.state == CREATING else None

    def write_intent(self) -> Intent:
        """planned -> creating, with the title and description sent and the source's version (adopting: under
        the found video's title, a failed item requeued first)."""
        at = datetime.now(UTC)
        if self.adopting is not None:
            if self.item.state == FAILED:
                self.ctx.ledger.requeue_failed(self.ctx.run_id, keys=[self.item.key])
            self.ctx.ledger.begin_create(
                self.item.key, self.ctx.run_id, self.adopting.title or self.item.spec.title
            )
            return Intent(self.item.key, at)
        self.ctx.ledger.begin_create(
            self.item.key,
            self.ctx.run_id,
            self.title,
            create_description=self.description,
            source_version=source_version(self.source) if self.source is not None else None,
        )
        return Intent(self.item.key, at)

    def write_done(self, intent: Intent, result: Any) -> None:
        """The answer: uploading (tus) or processing (single, URL)."""
        self.accepted(result)

    def write_found(self, intent: Intent, found: Any) -> None:
        """The video the lost answer's create made (or a lost run's, across the gap), adopted
        (reconcile.adopt_found)."""
        if self.adopting is not None:
            note = f"video {found.id} found by listing across the replication gap"
            self.ctx.ledger.note(self.item.key, self.ctx.run_id, note)
            log.info("item %s: video %s found across the replication gap", self.item.key, found.id)
        adopt_found(self.ctx, reload(self.ctx, self.item.key), found)

    def write_failed(self, intent: Intent, exc: BaseException) -> None:
        """creating -> planned: the service refused the create, nothing was made (the item fails next)."""
        why = f"create refused ({getattr(exc, 'code', None)})"
        self.ctx.ledger.reconcile_none(self.item.key, self.ctx.run_id, why)

    def write_void(self, intent: Intent, why: str) -> None:
        """creating -> planned: no video was made; the item may be created again."""
        self.ctx.ledger.reconcile_none(self.item.key, self.ctx.run_id, why or None)


def settle_creating(ctx: MigrateContext, item: Item) -> None:
    """An item left in creating (its answer lost, or a crash): adopt the video its create made, or plan it
    again (tasks/exactly_once.settle); Postponed (it stays creating) while that cannot be told."""
    settle(CreateJournal(ctx, item), create_intent(item), item_lookup(ctx, item.key))
