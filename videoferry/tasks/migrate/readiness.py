"""Readiness: learn many videos' statuses per list call (or by webhook) and move items to done/error."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from videoferry.connectors.errors import NotFoundError
from videoferry.connectors.ids import same_id
from videoferry.connectors.models import Video, VideoPage
from videoferry.core.tidy import same_title
from videoferry.state.errors import LedgerError
from videoferry.state.machine import CREATING, PLANNED, PROCESSING, UPLOADED, UPLOADING
from videoferry.state.models import Item
from videoferry.tasks.migrate.context import MigrateContext, Scope, scope_of
from videoferry.tasks.migrate.finish import warn_if_cut
from videoferry.tasks.migrate.reconcile import lower_bound

log = logging.getLogger(__name__)

#: The list's page size: one call covers up to this many videos.
PAGE_SIZE = 100
#: Items the service reports on after their upload is complete.
WATCH_STATES = (UPLOADED, PROCESSING)
#: Items whose video may still be made (a create to send, or an upload the service may make it from): while
#: any is left, new videos can come on top of the newest-first listing and its pages are asked one by one.
MAKING = (PLANNED, CREATING, UPLOADING)
#: Pages of one listing asked at once once nothing of ours is being made: the last poll of a big run lists
#: many pages (25 of a 3000-item run, 1.5 s one after the other: most of its tail after the last create). The
#: limiter still paces them; 8 keep the server's list busy where 4 left it gaps (29 pages of a 3000-video
#: listing against the emulator: 1.53-1.68 s with 4, 1.49-1.54 s with 8).
PAGES_AT_ONCE = 8
#: While creates are still to be made, a status poll comes only when the per-minute budget left covers the
#: creates the window will still see (those left, at most as many as the last minute sent) and the poll: in a
#: run the limits bind, a poll then would push a create past the window (a minute at the real limits) and
#: learn nothing the poll after the last upload does not. At most this long without a poll, though.
BUSY_POLL_SECONDS = 300.0
#: A poll tells the processing time once it finds this many videos ended (fewer: the poll came long after).
LATENCY_SAMPLES = 3
LATENCY_MARGIN = 1.25


class Watcher:
    """Polls the destination lists at most once per poll interval and records terminal statuses."""

    def __init__(self, ctx: MigrateContext) -> None:
        self.ctx = ctx
        self.polls = 0
        self.list_calls = 0
        self.last_poll = 0.0  # the last poll of every watched video
        self.last_listing = 0.0  # the last listing of any kind (a poll, or claims confirmed: claims.py)
        #: What the last listing showed: video id -> status (it confirms the claims it agrees with).
        self.seen: dict[str, str] = {}
        self.started = time.monotonic()
        self.first_watched: float | None = None  # when watching() first counted a watched item
        #: How long after an upload's end its video is seen terminal (seconds, with a margin: _learn_latency),
        #: None until a poll saw LATENCY_SAMPLES videos ending.
        self.latency: float | None = None
        self._upper: float | None = None  # the least of the polls' bounds from above (_learn_latency)
        self._lower = 0.0  # the longest time a video was seen not yet terminal after its upload's end
        self._held_since: float | None = None  # when a due poll was first held back for the youngest video
        self._early = False  # the pages behind the first were listed while this poll was held (list_early)
        self._page_size = PAGE_SIZE  # the server's page size, as the last listing showed it
        self._seen_at: dict[str, float] = {}  # this poll: video id -> when the page that showed it answered
        self._titles: dict[str, str] = {}  # this poll: video id -> the title the listing showed

    def watched(self) -> list[Item]:
        """Items whose upload is complete and whose video is not yet terminal (some without a known id)."""
        return self.ctx.ledger.items(WATCH_STATES)

    def watching(self) -> int:
        """How many items watched() holds, counted up to one more than a page, without reading them (every
        round asks whether any is, and may_list_early whether more than a page is; a poll reads them): a whole
        count read an index entry per watched item every round (up to BUSY_POLL_SECONDS of uploads)."""
        count = self.ctx.ledger.count(WATCH_STATES, at_most=self._page_size + 1)
        if count and self.first_watched is None:
            self.first_watched = time.monotonic()
        return count

    def due(
        self,
        watched: Callable[[], list[Item]],
        *,
        creates_left: Callable[[int], int],
        uploading: bool,
        now: float | None = None,
    ) -> bool:
        """Whether to poll now (`now`: time.monotonic()); never twice within the poll interval.

        watched: how to read the watched items (read only when the youngest upload's end decides).
        creates_left(at_most): counts the items whose create is not answered yet, up to at_most (asked only
        once the interval has passed: a ledger query, which reads no further than the minute's budget and one:
        the count is only compared with it); uploading: transfers still running. While
        creates are left, only when the poll takes no slot a create will want (see BUSY_POLL_SECONDS). After
        the last create, a poll that would come before the youngest upload's video can be done (its end, or
        now while uploads run, + the shortest processing seen) waits for that moment, by at most one poll
        interval: the poll that ends the run is not wasted on a video still processing.
        """
        now = time.monotonic() if now is None else now
        if now - self.last_listing < self.ctx.poll_seconds():
            return False  # at most one listing per poll interval, claims' confirmations included
        hold = self._hold(watched, creates_left, uploading, now)
        if hold is None:
            self._held_since = None
            return False
        if not hold:
            self._held_since = None
            return True
        if self._held_since is None:
            self._held_since = now
        return now - self._held_since >= self.ctx.poll_every()

    def _hold(
        self,
        watched: Callable[[], list[Item]],
        count_creates: Callable[[int], int],
        uploading: bool,
        now: float,
    ) -> bool | None:
        """None: no poll now; False: poll now; True: hold the poll for the youngest upload's video."""
        interval = self.ctx.poll_every()
        # Once webhooks carry the news the interval also counts from the run's start: a run whose every
        # status came by webhook makes no poll at all.
        webhooks = interval > self.ctx.poll_seconds()
        if now - (max(self.last_poll, self.started) if webhooks else self.last_poll) < interval:
            return None
        if count_creates(1):
            if now - max(self.last_poll, self.started) >= max(interval, BUSY_POLL_SECONDS):
                return False
            limiter = self.ctx.client.transport.limiter
            left = limiter.budget()
            # Counted up to the budget: each comparison below asks only whether the creates left reach it.
            # Counted to a minute's limit, it read that many index entries every round the poll was held.
            creates_left = count_creates(max(left, 1))
            if left <= min(creates_left, limiter.per_minute - left):
                return None  # the poll would take a slot a create wants
            if left <= creates_left:
                return False
            uploading = True  # the last creates go now: the poll that ends the run comes after them
        if self.latency is None:
            return False
        if uploading:
            youngest = time.time()
        else:
            ended = [i.updated_at.timestamp() for i in watched() if i.state == UPLOADED and i.updated_at]
            youngest = max(ended, default=0.0)
        return youngest + self.latency > time.time()

    def may_list_early(self, watching: int) -> bool:
        """Whether list_early is due: the poll is held for the youngest videos' processing, statuses come by
        polling alone (no webhook listener: claims have listings of their own), more videos are watched
        (watching(): the round's count, up to a page and one) than one page holds, nothing of ours can still
        be made (the pages stay put), and the pages behind the first were not listed for this poll yet."""
        if self._held_since is None or self._early or self.ctx.webhooks is not None:
            return False
        return watching > self._page_size and self.ctx.ledger.count(MAKING, at_most=1) == 0

    def list_early(self) -> list[tuple[str, str, str]]:
        """The held poll, split: the pages behind the first, now, while the youngest videos still process.

        Nothing of ours can be made any more, so the newest-first pages stay put: the first holds the youngest
        videos, the ones behind it videos whose processing ended long ago. Listing those now moves their
        items on while the poll waits; the poll then lists the first page, and goes on only for a video this
        walk did not see ended. Each page is asked once either way: the same calls, one wait shorter. It
        records what it sees, asks no single video (the poll does that) and is not timed (learn).
        """
        self._early = True
        return self.listing([i for i in self.watched() if i.video_id], first_page=2)

    def _learn_latency(self, before: list[Item], changed: list[tuple[str, str, str]]) -> None:
        """Learn how long after its upload's end (as the ledger recorded it) a video is seen terminal.

        Each video the listing showed (timed to the answer of the page that showed it, not to the poll's
        start: its list may have waited for a rate-limit slot) bounds its own processing: seen terminal, from
        above; seen not yet terminal, from below (a video already processing counts from when a poll first
        saw it so). The estimate is the larger of the least upper bound of the polls that found
        LATENCY_SAMPLES or more uploaded videos terminal and the longest lower bound (the slowest processing
        seen), with a margin: polling too early costs a whole poll interval, too late only the excess. A
        poll's upper bound is its LATENCY_SAMPLES-th shortest such time (that many videos ended within it),
        not its shortest: an upload whose last answer was lost is recorded as ended only after the HEAD that
        learned it (0.1-0.5 s late), and its video then seems to process that much faster. Taking the polls'
        largest bound instead took in every poll that came late (held while creates were left, or retried
        through a 5xx burst): 8.6 s against the emulator's 2 s of processing in a faulted run, whose last
        poll then came 6.6 s after its last video was done.
        """
        # Since the upload's end (uploaded), or since a poll first saw the video processing (processing: less
        # than since the end, so still a lower bound).
        ages = {
            i.key: (i.state, self._seen_at[i.video_id] - i.updated_at.timestamp())
            for i in before
            if i.updated_at and i.video_id in self._seen_at
        }
        ended = {key for key, _, to_state in changed if to_state not in WATCH_STATES}
        seen = [max(0.0, age) for key, (state, age) in ages.items() if key in ended and state == UPLOADED]
        waiting = [age for key, (_, age) in ages.items() if key not in ended]
        if len(seen) >= LATENCY_SAMPLES:
            bound = sorted(seen)[LATENCY_SAMPLES - 1]
            self._upper = bound if self._upper is None else min(self._upper, bound)
        self._lower = max([self._lower, *waiting])
        if self._upper is not None:
            self.latency = max(self._upper, self._lower) * LATENCY_MARGIN

    def poll_once(self) -> list[tuple[str, str, str]]:
        """One round: list each destination (newest first) until every watched video is seen."""
        # The list goes once the limits have room: the videos to watch are read then, not before that wait
        # (a video that ended during it would be missing, and those that ended before seem slower to process).
        self.ctx.client.transport.limiter.wait_for_room()
        items = self.watched()
        self.polls += 1
        self.last_poll = time.monotonic()
        self._held_since = None
        self._early = False
        return self.listing(items, learn=True, at=self.last_poll)

    def listing(
        self,
        items: list[Item],
        *,
        messages: dict[str, str] | None = None,
        learn: bool = False,
        at: float | None = None,
        first_page: int = 1,
    ) -> list[tuple[str, str, str]]:
        """List each destination of these items (newest first) until every one of them is seen; record the
        statuses it shows (the service's word: a claim is only a reason to look). messages: the reason of a
        video the listing shows in error/aborted (a webhook's); learn: time processing from this listing;
        first_page > 1: the part of a held poll behind its first page (list_early): no GET for a video it
        does not see, and the poll interval still counts from the last whole listing."""
        self._seen_at = {}
        self._titles = {}
        if first_page == 1:
            self.last_listing = time.monotonic() if at is None else at
        by_parent: dict[str, list[Item]] = defaultdict(list)
        for item in items:
            by_parent[item.spec.parent_id or ""].append(item)
        statuses: dict[str, str] = {}
        missing: list[Item] = []
        for parent, group in by_parent.items():
            bounds = [lower_bound(self.ctx, i) for i in group]
            known = [b for b in bounds if b is not None]
            oldest = min(known) if known and len(known) == len(bounds) else None
            found = self._list_parent(parent, group, oldest, first_page)
            statuses.update(found)
            if first_page == 1:
                missing.extend(i for i in group if i.video_id and i.video_id not in found)
        self.seen = dict(statuses)
        reasons = failure_messages(statuses)
        reasons.update({v: m for v, m in (messages or {}).items() if v in reasons})
        changed = self.ctx.ledger.apply_statuses(self.ctx.run_id, statuses, reasons) if statuses else []
        if learn:
            self._learn_latency(items, changed)  # what the listing showed (a GET below is not timed)
        for item in items:  # a title the create carried and the service cut: said once (finish.warn_if_cut)
            stored = self._titles.get(item.video_id or "")
            if stored is not None and item.create_title:
                warn_if_cut(self.ctx, item.key, item.create_title, stored)
        for item in missing:
            changed.extend(self._get_one(item))
        return changed

    def _list_parent(
        self, parent: str, group: list[Item], oldest: datetime | None, first_page: int = 1
    ) -> dict[str, str]:
        ids = sorted(i.video_id for i in group if i.video_id)
        scope = self.ctx.scopes.get(parent)
        if parent and scope is None and ids:
            scope = self._scope_of(parent, ids[0])
            self.ctx.scopes[parent] = scope
        return self._list_scope(scope if parent else None, parent, group, oldest, first_page)

    def _scope_of(self, parent: str, video_id: str) -> Scope:
        """Whether a parent id is a folder or a project, learned once from one of its videos."""
        try:
            video = self.ctx.client.videos.get(video_id)
        except NotFoundError:
            return "project_id"  # that video is gone; _get_one reports it
        return scope_of(parent, video)

    def _list_scope(
        self,
        scope: Scope | None,
        parent: str,
        group: list[Item],
        oldest: datetime | None,
        first_page: int = 1,
    ) -> dict[str, str]:
        """Page newest-first until every watched video is seen, the pages end, or they predate our creates.

        The page size is the server's (it may cap per_page), a missing `total` is not an end, and a video
        whose id the create answer did not give (init named a session) is recognised by its create title, as
        a service may keep it (core.tidy.same_title; titles a tidying service could make alike were sent as
        markers, so one title fits one item).
        """
        wanted = {i.video_id for i in group if i.video_id}
        unknown = [i for i in group if not i.video_id]
        found: dict[str, str] = {}
        filters: dict[str, str] = {scope: parent} if scope else {}
        settled = self.ctx.ledger.count(MAKING, at_most=1) == 0  # no video of ours can appear above the pages
        page_from = page = first_page
        size, pages = self._page_size, None

        def reachable() -> int:
            """How many watched videos the pages from page_from can hold: all, less a page per page before."""
            return len(wanted) - size * (page_from - 1)

        while True:
            # The first page alone (it tells the page size and the total; the pages behind a held poll's first
            # are walked with the size its last listing told); then, once nothing of ours is being made, up to
            # PAGES_AT_ONCE at once, never more than the unseen videos fill or the total holds: pages the
            # one-by-one walk would not ask are asked only when watched videos are missing.
            left = max(1, reachable() - len(found) + len(unknown))
            alone = page == 1 or not settled
            wave = 1 if alone else max(1, min(PAGES_AT_ONCE, -(-left // size)))
            if pages is not None:
                wave = max(1, min(wave, pages - page + 1))
            answers = self._pages(filters, range(page, page + wave))
            self.list_calls += len(answers)  # every page asked, those after an end included
            for result, answered in answers:
                self._take_page(result.items, answered, wanted, unknown, found, parent)
                size = result.pagination.per_page or len(result.items) or size
                self._page_size = size
                total = result.pagination.total
                pages = -(-total // size) if total is not None and size else None
                if len(found) >= reachable() and not unknown:
                    return found  # every watched video seen (or, from a later page, all those can be)
                if not result.items or len(result.items) < size or (pages is not None and page >= pages):
                    return found
                last = result.items[-1].created_at
                if oldest is not None and last is not None and last < oldest:
                    return found  # older than every create of ours: the rest are not in this listing
                page += 1

    def _take_page(
        self,
        videos: list[Video],
        answered: float,
        wanted: set[str],
        unknown: list[Item],
        found: dict[str, str],
        parent: str,
    ) -> None:
        """What one page shows: the statuses of the watched videos on it (into found), the ids of items whose
        create answer gave none (recognised by their create title), and when and under which title each was
        seen."""
        for video in videos:
            if video.id not in wanted and unknown:
                self._learn_id(unknown, video, parent)
            if video.id in wanted and video.status:
                found[video.id] = video.status
                self._seen_at[video.id] = answered
                if video.title is not None:
                    self._titles[video.id] = video.title

    def _pages(self, filters: dict[str, str], numbers: range) -> list[tuple[VideoPage, float]]:
        """These pages of the newest-first listing, each with when it answered (no video a page shows
        terminal became so later); several at once on threads of their own (the limiter paces them)."""

        def one(number: int) -> tuple[VideoPage, float]:
            result = self.ctx.client.videos.list(
                order="created_at.desc", page=number, per_page=PAGE_SIZE, **filters
            )
            return result, time.time()

        if len(numbers) == 1:
            return [one(numbers[0])]
        with ThreadPoolExecutor(max_workers=len(numbers), thread_name_prefix="list-page") as pool:
            return list(pool.map(one, numbers))

    def _learn_id(self, unknown: list[Item], video: Video, parent: str) -> None:
        """Record the id of a video found by its item's create title (init answered a session id)."""
        mine = [i for i in unknown if same_title(i.create_title or i.spec.title, video.title or "")]
        if len(mine) != 1:
            return
        item = mine[0]
        if parent and not (same_id(parent, video.project_id) or same_id(parent, video.folder_id)):
            return
        bound = lower_bound(self.ctx, item)
        if video.deleted_at is not None or (bound and video.created_at and video.created_at < bound):
            return
        try:
            self.ctx.ledger.set_video_id(item.key, self.ctx.run_id, video.id)
        except LedgerError:
            return  # another item owns that video: not this item's
        unknown.remove(item)
        if video.status:
            self.ctx.ledger.apply_statuses(self.ctx.run_id, {video.id: video.status})

    def _get_one(self, item: Item) -> list[tuple[str, str, str]]:
        """Fallback for a video no list showed: one GET (still at most one per video per poll)."""
        assert item.video_id is not None
        try:
            video = self.ctx.client.videos.get(item.video_id)
        except NotFoundError as exc:
            self.ctx.ledger.fail(item.key, self.ctx.run_id, exc.code or 400404, "video vanished (404)")
            return [(item.key, item.state, "failed")]
        if not video.status:
            return []
        self.seen[video.id] = video.status
        found = {video.id: video.status}
        return self.ctx.ledger.apply_statuses(self.ctx.run_id, found, failure_messages(found))


def failure_messages(statuses: dict[str, str]) -> dict[str, str]:
    """A reason for every video found in error/aborted (lists and gets carry none; webhooks do)."""
    return {
        vid: f"the service ended the video in status {status} (its reason comes only by webhook)"
        for vid, status in statuses.items()
        if status in ("error", "aborted")
    }
