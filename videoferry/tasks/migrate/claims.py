"""Webhooks as claims: the receiver's media.update.status events are confirmed by a listing before the ledger
believes them (one list call covers up to 100 videos); a forged, early or stale claim changes nothing."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from videoferry.connectors.ids import try_normal_id
from videoferry.connectors.webhook import WebhookClaim, WebhookReceiver
from videoferry.state.machine import CREATING, PLANNED, PROCESSING, UPLOADED, UPLOADING
from videoferry.tasks.migrate.context import WEBHOOK_POLL_SECONDS, MigrateContext
from videoferry.tasks.migrate.readiness import PAGE_SIZE, Watcher

log = logging.getLogger(__name__)

#: Claims worth a listing: an end status. Anything else ("processing"...) tells nothing the poll needs.
CLAIMED = frozenset({"done", "error", "aborted"})
#: Items whose video may still send a claim: those waiting for it, and those not uploaded yet.
OWED = (PLANNED, CREATING, UPLOADING, UPLOADED, PROCESSING)


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

    take() drains the receiver (the latest claim of a video wins; its wait counts from the first). confirm()
    lists the claimed videos the run watches, at most once per poll interval (the listing the poll would make,
    for those videos only: one call while they are among the 100 newest), and the ledger takes what the
    listing shows, never the claim. due() says when: while creates are owed, for a full page of claims
    (PAGE_SIZE) that takes no create's slot; after the creates, once the last claims are in; always once the
    oldest claim has waited wait_bound(). A claim about a video this ledger does not hold costs no call; one
    about a video still uploading waits for its upload to complete; a full poll covers every claim of the
    videos it lists.
    """

    def __init__(self, ctx: MigrateContext) -> None:
        self.ctx = ctx
        self.pending: dict[str, WebhookClaim] = {}
        self.since: dict[str, float] = {}  # video id -> when its first pending claim was taken (monotonic)
        self.last_claim = 0.0  # when the last claim worth a listing was taken (monotonic)
        self._hold_until = 0.0  # polls wait until then: no unclaimed watched video is older (hold_polls)

    def take(self) -> None:
        """The claims that arrived since the last take."""
        receiver = self.ctx.webhooks
        if receiver is None:
            return
        now = time.monotonic()
        for claim in receiver.drain():
            if claim.status in CLAIMED:
                video_id = _normal(claim.video_id)
                self.pending[video_id] = claim
                self.since.setdefault(video_id, now)
                self.last_claim = now

    def covered(self, watcher: Watcher) -> None:
        """A full poll listed every watched video: the claims about them are settled by what it showed."""
        if self.pending:
            self._settle(watcher, self._waiting())

    def wait_bound(self) -> float:
        """The longest a claim waits for its confirmation to be due: the safety-net poll interval
        (WEBHOOK_POLL_SECONDS, or the poll interval when longer) and one poll interval (the listing then
        comes within one more poll interval, the service's spacing of listings, and the limiter's wait)."""
        return self.safety() + self.ctx.poll_seconds()

    def due(
        self,
        watcher: Watcher,
        now: float | None = None,
        *,
        creates_left: Callable[[int], int] | None = None,
        quiet_from: float | None = None,
    ) -> bool:
        """Whether to confirm now: claims wait, a poll interval since the last listing has passed, and...

        - while creates are owed (creates_left(at_most) given: the creates not made yet, counted up to
          at_most), more than a poll interval of them at the per-second limit: a full page of claims waits
          (PAGE_SIZE, those still uploading not counted) and the list takes no slot a create of this minute
          window wants (the budget left is more than the creates left);
        - once the last creates will be made within a poll interval, or after them (quiet_from: when the
          transfers ended, or now while they run): every item not ended (uploading ones included) has a
          claim, or no claim came for a poll interval since quiet_from and the last claim (the last claims
          are in: the listing is not spent seconds before them, which the spacing of listings would make
          cost a poll interval);
        - else at once;
        - and, whatever the above, once the oldest claim has waited wait_bound().
        """
        now = time.monotonic() if now is None else now
        if not self.pending or now - watcher.last_listing < self.ctx.poll_seconds():
            return False
        if now - min(self.since.values()) >= self.wait_bound():
            return True
        limiter = self.ctx.client.transport.limiter
        interval_of_creates = limiter.per_second * self.ctx.poll_seconds()
        budget = limiter.budget() if creates_left is not None else 0
        # Counted one past the largest number it is compared with: past that, every comparison is the same.
        bound = max(math.ceil(interval_of_creates), budget) + 1
        creates = creates_left(bound) if creates_left is not None else 0
        if creates > interval_of_creates:
            return self._full_page() and budget > creates
        if quiet_from is not None and now - max(quiet_from, self.last_claim) < self.ctx.poll_seconds():
            self._waiting()  # claims about videos of no item of ours do not count
            return len(self.pending) >= self.ctx.ledger.count(OWED)
        return True

    def hold_polls(self, watcher: Watcher, now: float | None = None) -> bool:
        """Whether the watcher's polls wait while claims wait for their confirmation (its listing is near):
        within the safety-net interval (Claims.safety()) of the last poll (or the run's start), and after it
        while every watched video without a claim has been watched for less than that interval (no webhook of
        it can have been lost yet). A video whose webhook was lost is listed within that interval after its
        upload, or of the last poll. Before the run's first claim, they wait until the first watched video
        has waited one poll interval: none of its webhooks can be late before then (a poll sooner would
        only learn what the webhooks are about to say; when none ever come, polling starts that much later).
        """
        now = time.monotonic() if now is None else now
        if not self.pending:
            first = watcher.first_watched
            before_any = self.ctx.webhooks is not None and self.last_claim == 0.0
            return before_any and first is not None and now - first < self.ctx.poll_seconds()
        if now - max(watcher.last_poll, watcher.started) < self.safety() or now < self._hold_until:
            return True
        unclaimed = [i for i in watcher.watched() if _normal(i.video_id or "") not in self.pending]
        ages = [time.time() - i.updated_at.timestamp() if i.updated_at else math.inf for i in unclaimed]
        if any(age >= self.safety() for age in ages):
            return False
        self._hold_until = now + self.safety() - max(ages, default=0.0)
        return True

    def safety(self) -> float:
        """The safety-net poll interval (WEBHOOK_POLL_SECONDS, or the poll interval when longer)."""
        return max(self.ctx.poll_seconds(), WEBHOOK_POLL_SECONDS)

    def _full_page(self) -> bool:
        if len(self.pending) < PAGE_SIZE:
            return False
        return len(self.pending) - len(self._waiting()) >= PAGE_SIZE

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
            self._pop(video_id)
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
                claim = self._pop(video_id)
                if watcher.seen[video_id] == claim.status:
                    self.ctx.claims_confirmed += 1
                else:
                    self.ctx.claims_refuted += 1
                    shown = watcher.seen[video_id]
                    log.info("webhook: %s claimed %s; the service says %s", video_id, claim.status, shown)
            elif video_id not in waiting:
                self._pop(video_id)  # an end state already (or gone): nothing to confirm
                self.ctx.claims_ignored += 1

    def _pop(self, video_id: str) -> WebhookClaim:
        self.since.pop(video_id, None)
        return self.pending.pop(video_id)


__all__ = ["CLAIMED", "Claims", "start_webhooks"]
