"""Webhooks as claims: the receiver's media.update.status events are confirmed by a listing before the ledger
believes them (one list call covers up to 100 videos); a forged, early or stale claim changes nothing."""

from __future__ import annotations

import logging
import threading
import time

from connectors.ids import try_normal_id
from connectors.webhook import WebhookClaim, WebhookReceiver
from state.machine import UPLOADING
from tasks.migrate.context import MigrateContext
from tasks.migrate.readiness import Watcher

log = logging.getLogger(__name__)

#: Claims worth a listing: an end status. Anything else ("processing"...) tells nothing the poll needs.
CLAIMED = frozenset({"done", "error", "aborted"})


def _normal(video_id: str) -> str:
    return try_normal_id(video_id) or video_id


def start_webhooks(ctx: MigrateContext, listen: str) -> WebhookReceiver:
    """Start the webhook receiver on HOST:PORT (credentials from VIDEOFERRY_WEBHOOK_USERNAME/_PASSWORD).

    Beyond loopback without credentials it refuses to start (WebhookConfigError: exit status 2). Events are
    claims (Claims drains and confirms them). A payload of a shape we do not know is warned about once; polls
    keep their normal interval until a claim was confirmed (ctx.poll_every).
    """
    warned = threading.Event()

    def on_invalid(shape: str) -> None:
        if not warned.is_set():
            warned.set()
            log.warning(
                "a webhook of an unknown shape arrived (%s); statuses are learned by polling every %.0f s",
                shape,
                ctx.poll_seconds(),
            )

    receiver = WebhookReceiver.from_listen(listen, on_invalid=on_invalid)
    receiver.start()
    ctx.webhooks = receiver
    return receiver


class Claims:
    """The claims drained from the receiver that wait for a listing to confirm them.

    take() drains the receiver (the latest claim of a video wins). confirm() lists the claimed videos the run
    watches, at most once per poll interval (the listing the poll would make, for those videos only: one call
    while they are among the 100 newest), and the ledger takes what the listing shows, never the claim. A
    claim about a video this ledger does not hold costs no call; one about a video still uploading waits for
    its upload to complete; a full poll covers every claim of the videos it lists.
    """

    def __init__(self, ctx: MigrateContext) -> None:
        self.ctx = ctx
        self.pending: dict[str, WebhookClaim] = {}

    def take(self) -> None:
        """The claims that arrived since the last take."""
        receiver = self.ctx.webhooks
        if receiver is None:
            return
        for claim in receiver.drain():
            if claim.status in CLAIMED:
                self.pending[_normal(claim.video_id)] = claim

    def covered(self, watcher: Watcher) -> None:
        """A full poll listed every watched video: the claims about them are settled by what it showed."""
        if self.pending:
            self._settle(watcher, self._waiting())

    def due(self, watcher: Watcher, now: float | None = None) -> bool:
        """Whether claims wait and the poll interval since the last listing has passed."""
        now = time.monotonic() if now is None else now
        return bool(self.pending) and now - watcher.last_listing >= self.ctx.poll_seconds()

    def confirm(self, watcher: Watcher) -> list[tuple[str, str, str]]:
        """List the watched videos claims are about; the ledger takes what the listing shows."""
        waiting = self._waiting()
        claimed = [i for i in watcher.watched() if i.video_id and _normal(i.video_id) in self.pending]
        changed: list[tuple[str, str, str]] = []
        if claimed:
            reasons = {v: c.reason for v, c in self.pending.items() if c.reason and c.status != "done"}
            changed = watcher.listing(claimed, messages=reasons)
        self._settle(watcher, waiting)
        return changed

    def _waiting(self) -> set[str]:
        """The claimed videos whose item is still uploading: their claims wait for the upload to complete.
        Claims about videos this ledger does not hold are dropped here (ignored: no call is spent on them)."""
        owners = self.ctx.ledger.keys_for_videos(list(self.pending))
        for video_id in [v for v in self.pending if v not in owners]:
            del self.pending[video_id]
            self.ctx.claims_ignored += 1
        return {v for v, key in owners.items() if v in self.pending and self._state(key) == UPLOADING}

    def _state(self, key: str) -> str | None:
        item = self.ctx.ledger.get(key)
        return item.state if item is not None else None

    def _settle(self, watcher: Watcher, waiting: set[str]) -> None:
        """After a listing: claims it agreed with are confirmed (polls may then slow down), those it showed
        otherwise refuted; claims about videos it did not list and no longer watched are ignored."""
        for video_id in list(self.pending):
            if video_id in watcher.seen:
                claim = self.pending.pop(video_id)
                if watcher.seen[video_id] == claim.status:
                    self.ctx.claims_confirmed += 1
                else:
                    self.ctx.claims_refuted += 1
                    shown = watcher.seen[video_id]
                    log.info("webhook: %s claimed %s; the service says %s", video_id, claim.status, shown)
            elif video_id not in waiting:
                del self.pending[video_id]  # an end state already (or gone): nothing to confirm
                self.ctx.claims_ignored += 1


__all__ = ["CLAIMED", "Claims", "start_webhooks"]
