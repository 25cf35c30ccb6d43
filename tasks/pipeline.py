"""The migration's main loop (no Prefect needed): parallel transfers, status polling and finishing."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from connectors.errors import AuthError, VideoApiError
from state.machine import CREATING, DONE, FAILED, PLANNED, UPLOADING
from tasks.context import RunContext
from tasks.finish import finish_item
from tasks.readiness import Watcher

log = logging.getLogger(__name__)

#: States transfer workers take items from.
TRANSFER_STATES = (PLANNED, CREATING, UPLOADING)
#: Largest batch a transfer task gets.
MAX_BATCH = 25


class Handle(Protocol):
    """A running batch (a concurrent.futures.Future or a Prefect future adapter)."""

    def done(self) -> bool: ...


Submit = Callable[[list[str]], Handle]


def make_batches(keys: Sequence[str], transfers: int, max_batch: int = MAX_BATCH) -> list[list[str]]:
    """Split keys so every worker gets work: at most max_batch per batch, at least `transfers` batches."""
    if not keys:
        return []
    size = max(1, min(max_batch, math.ceil(len(keys) / max(transfers, 1))))
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


def drive(
    ctx: RunContext,
    submit: Submit,
    *,
    transfers: int,
    wait_timeout: float | None = None,
    tick: float = 0.2,
    on_tick: Callable[[], None] | None = None,
) -> bool:
    """Transfer every pending item, watch the uploaded ones and finish the done ones.

    Returns True when nothing is left in flight (every item reached an end state this run), False when the
    wait timed out or the run was stopped (the ledger keeps everything for the next run).
    """
    keys = ctx.ledger.pending_keys(TRANSFER_STATES)
    queue = make_batches(keys, transfers)
    queue.reverse()
    handles: list[Handle] = []
    watcher = Watcher(ctx)
    finish_tried: set[str] = set()
    started = time.monotonic()
    while True:
        running = [h for h in handles if not h.done()]
        while queue and len(running) < transfers and not ctx.abort.is_set():
            handle = submit(queue.pop())
            handles.append(handle)
            running.append(handle)
        if ctx.abort.is_set():
            if not running:
                return False
        else:
            _finish_done(ctx, finish_tried)
            watched = watcher.watched()
            if watched and time.monotonic() - watcher.last_poll >= ctx.poll_interval:
                _poll(ctx, watcher)
                _finish_done(ctx, finish_tried)
                watched = watcher.watched()
            if not running and not queue and not watched:
                return True
            if not running and wait_timeout is not None and time.monotonic() - started > wait_timeout:
                log.warning("stopped waiting for processing after %.0f s; rerun to go on", wait_timeout)
                return False
        if on_tick is not None:
            on_tick()
        ctx.abort.wait(tick)


def _poll(ctx: RunContext, watcher: Watcher) -> None:
    try:
        watcher.poll_once()
    except AuthError as exc:
        ctx.stop(str(exc), config_error=True)
    except VideoApiError as exc:
        log.warning("status poll failed (%s); trying again next round", exc.code or exc.status)


def _finish_done(ctx: RunContext, tried: set[str]) -> None:
    for item in ctx.ledger.items([DONE]):
        if item.key in tried or ctx.abort.is_set():
            continue
        tried.add(item.key)
        try:
            state = finish_item(ctx, item)
        except Exception:
            log.exception("item %s: the finish step crashed; it stays done for the next run", item.key)
            continue
        if state == FAILED:
            log.info("item %s: finish step failed", item.key)
