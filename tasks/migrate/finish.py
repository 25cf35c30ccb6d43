"""The finish step: once a video is done, apply what could not travel with the create, each call once."""

from __future__ import annotations

import logging
from typing import Any

from connectors.errors import AuthError, VideoApiError
from core.item import owed_update
from state.machine import DONE, FAILED, FINISHED
from state.models import Item
from tasks.exactly_once import OpJournal, error_code, exactly_once
from tasks.migrate.context import MigrateContext

log = logging.getLogger(__name__)


def owes_nothing(item: Item) -> bool:
    """Whether the finish step has no call to make for this item (nothing but the move to finished)."""
    return not item.spec.chapters and not owed_update(item.spec, item.create_title, item.create_description)


def finish_item(ctx: MigrateContext, item: Item) -> str:
    """Apply metadata and chapters to a done item's video, then mark it finished; returns the new state.

    Each call is an operation through tasks/exactly_once.py (op_key finish:<key>:update|chapters); both
    are the same whatever happened before, so one an earlier run left open is simply sent again.
    """
    assert item.video_id is not None
    video_id = item.video_id
    fields = owed_update(item.spec, item.create_title, item.create_description)
    steps: list[tuple[str, dict[str, Any]]] = []
    if fields:
        steps.append(("update", fields))
    if item.spec.chapters:
        marks = [[c.time, c.title] for c in item.spec.chapters]
        steps.append(("chapters", {"items": marks, "enabled": True}))
    for kind, params in steps:
        key = f"finish:{item.key}:{kind}"
        journal: OpJournal[None] = OpJournal(
            ctx.ledger, ctx.run_id, key, kind, params, item_key=item.key, video_id=video_id
        )

        def call(kind: str = kind, params: dict[str, Any] = params) -> None:
            if kind == "update":
                ctx.client.videos.update(video_id, **params)
            else:
                ctx.client.videos.set_chapters(video_id, [(t, s) for t, s in params["items"]], enabled=True)

        try:
            exactly_once(journal, call)
        except VideoApiError as exc:
            if isinstance(exc, AuthError):
                ctx.stop(exc)
                return DONE
            ctx.ledger.fail(item.key, ctx.run_id, error_code(exc), f"{kind}: {exc}", exc.request_id)
            return FAILED
    ctx.ledger.finished(item.key, ctx.run_id)
    return FINISHED
