"""An item failed on the normal path: fail_item (its video's id recorded first), api_failure (a refusal)."""

from __future__ import annotations

from connectors.errors import VideoApiError, stops_run
from state.machine import UPLOADING
from state.models import Item
from tasks.exactly_once import error_code
from tasks.migrate.context import MigrateContext, reload
from tasks.migrate.reconcile import claim_video


def fail_item(
    ctx: MigrateContext, item: Item, code: str | int, message: str, request_id: str | None = None
) -> None:
    """Fail the item; one whose init named only an upload session gets its video's id recorded first.

    A failed item without a video id is requeued to planned (a new create), so an uploading item's video is
    found by listing before it fails; a lookup that cannot decide leaves it uploading (Postponed) for later.
    """
    current = reload(ctx, item.key)
    if current.state == UPLOADING:
        claim_video(ctx, current)
    ctx.ledger.fail(item.key, ctx.run_id, code, message, request_id=request_id)


def api_failure(ctx: MigrateContext, item: Item, exc: VideoApiError) -> None:
    """Record a definitive API refusal; a refusal of the token or of the workspace's state (quota, balance...)
    stops the whole run instead (it would fail every item): the item stays as it is (planned, when its create
    was refused) for the rerun."""
    if stops_run(exc):
        ctx.stop(exc)
        return
    fail_item(ctx, item, error_code(exc), str(exc), exc.request_id)
