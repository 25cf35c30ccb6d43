"""One item's walk through its transfer (reconcile, create, upload), and a batch of items in turn."""

from __future__ import annotations

import logging

from videoferry.connectors.errors import AuthError, VideoApiError, WorkspaceRefusedError
from videoferry.connectors.ledger_errors import RemoteLedgerLostError
from videoferry.state.errors import LedgerError
from videoferry.state.machine import CREATING, FAILED, PLANNED, UPLOADING
from videoferry.tasks.gap import GapListingFailed
from videoferry.tasks.lookup import Postponed, TooEarly
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.create import create_item
from videoferry.tasks.migrate.create_journal import settle_creating
from videoferry.tasks.migrate.item_failure import fail_item
from videoferry.tasks.migrate.reconcile import claim_video
from videoferry.tasks.migrate.upload import upload_item

log = logging.getLogger(__name__)


def transfer_item(ctx: MigrateContext, key: str) -> str:
    """Bring one item as far as the upload goes (uploaded / processing / failed); returns its state."""
    ledger = ctx.ledger
    item = ledger.get(key)
    if item is None:
        raise LedgerError(f"item {key!r} is not in the ledger")
    while not ctx.abort.is_set():
        if item.state == CREATING:
            settle_creating(ctx, item)
        elif item.state == PLANNED:
            if ctx.count_create(key) is None:  # counted over the whole run, every reconcile round included
                made = ctx.max_create_attempts
                fail_item(ctx, item, "create_attempts", f"no video after {made} create attempts")
            else:
                create_item(ctx, item)  # its gap step first: the ledger may have missed its create
        elif item.state == UPLOADING:
            upload_item(ctx, item)
            current = ledger.get(key)
            assert current is not None
            if current.state == UPLOADING:  # stopped without a verdict (abort): leave it for the next run
                return current.state
        else:
            return item.state
        refreshed = ledger.get(key)
        assert refreshed is not None
        item = refreshed
    return item.state


def transfer_batch(ctx: MigrateContext, keys: list[str]) -> dict[str, int]:
    """Transfer a batch of items one after another; one item's failure never stops the others."""
    outcome: dict[str, int] = {}
    for key in keys:
        if ctx.abort.is_set():
            break
        try:
            state = transfer_item(ctx, key)
        except Postponed as exc:
            state = _postponed(ctx, key, exc)
        except (AuthError, WorkspaceRefusedError, GapListingFailed, RemoteLedgerLostError) as exc:  # stops
            ctx.stop(exc)
            break
        except Exception as exc:  # a surprise in one item is recorded on it; the batch goes on
            log.exception("item %s: transfer crashed", key)
            state = _record_crash(ctx, key, exc)
        outcome[state] = outcome.get(state, 0) + 1
    return outcome


def _postponed(ctx: MigrateContext, key: str, exc: Postponed) -> str:
    """An item whose lookup could not tell yet: in creating, it is parked (tasks/migrate/parked.py) until
    its settle time has passed (TooEarly), or for a pause when its lookup could not decide; its state."""
    item = ctx.ledger.get(key)
    state = item.state if item is not None else CREATING
    if state == CREATING:
        if isinstance(exc, TooEarly):
            ctx.parked.park(key, exc.wait)
        else:
            ctx.parked.retry(key)
    return state


def _record_crash(ctx: MigrateContext, key: str, exc: Exception) -> str:
    item = ctx.ledger.get(key)
    if item is None or item.state in (FAILED, CREATING):
        return item.state if item is not None else FAILED  # creating is reconciled by the next run
    if item.state == UPLOADING and item.video_id is None:
        # Failed without a video id, the next run would create again beside the video its init made.
        try:
            claim_video(ctx, item)
        except Exception:
            log.warning("item %s: its video could not be looked up; it stays uploading for the next run", key)
            return item.state
    code = exc.code if isinstance(exc, VideoApiError) and exc.code is not None else "internal"
    message = str(exc) if isinstance(exc, VideoApiError) else f"internal error: {type(exc).__name__}"
    try:
        ctx.ledger.fail(key, ctx.run_id, code, message)
    except LedgerError:
        log.exception("item %s: could not record the failure", key)
    return FAILED
