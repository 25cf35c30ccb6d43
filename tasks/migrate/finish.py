"""The finish step: once a video is done, apply what could not travel with the create (idempotent calls)."""

from __future__ import annotations

import logging
from typing import Any

from connectors.errors import AuthError, VideoApiError
from core.item import owed_update
from state.machine import DONE, FAILED, FINISHED
from state.models import Item
from tasks.migrate.context import MigrateContext, error_code

log = logging.getLogger(__name__)


def owes_nothing(item: Item) -> bool:
    """Whether the finish step has no call to make for this item (nothing but the move to finished)."""
    return not item.spec.chapters and not owed_update(item.spec, item.create_title, item.create_description)


def finish_item(ctx: MigrateContext, item: Item) -> str:
    """Apply metadata and chapters to a done item's video, then mark it finished; returns the new state."""
    assert item.video_id is not None
    ledger = ctx.ledger
    fields = owed_update(item.spec, item.create_title, item.create_description)
    steps: list[tuple[str, dict[str, Any]]] = []
    if fields:
        steps.append(("update", fields))
    if item.spec.chapters:
        marks = [[c.time, c.title] for c in item.spec.chapters]
        steps.append(("chapters", {"items": marks, "enabled": True}))
    for kind, params in steps:
        op_id = ledger.record_op_intent(item.key, kind, params, run_id=ctx.run_id, video_id=item.video_id)
        try:
            if kind == "update":
                ctx.client.videos.update(item.video_id, **params)
            else:
                pairs = [(t, s) for t, s in params["items"]]
                ctx.client.videos.set_chapters(item.video_id, pairs, enabled=True)
        except VideoApiError as exc:
            ledger.record_op_outcome(
                op_id,
                "failed",
                error_code=exc.code,
                error_message=str(exc),
                request_id=exc.request_id,
                run_id=ctx.run_id,
            )
            if isinstance(exc, AuthError):
                ctx.stop(str(exc), config_error=True)
                return DONE
            code = error_code(exc)
            ledger.fail(item.key, ctx.run_id, code, f"{kind}: {exc}", exc.request_id)
            return FAILED
        ledger.record_op_outcome(op_id, "done", run_id=ctx.run_id)
    ledger.finished(item.key, ctx.run_id)
    return FINISHED
