"""One listing settles many lookups: lost create answers of a round share a parent's newest-first listing.

A lookup after a lost answer (tasks/lookup.py) used to list once per answer, and once more per failed
listing. Here the lookups of one parent share one listing, taken under a per-parent lock: it is kept with
the time (our clock) it was taken before its request went out, and the service-clock bound it reaches down
to. A later lookup takes it as its answer when it reaches down far enough (its bound at or below the
lookup's) and was taken after the lookup's intent (an early look's: after the loss); "not there" from it
is believed only when it was taken at least tasks/lookup.SETTLE_SECONDS after the lost answer
(tasks/lookup.settle_start: the settle rule of every lookup holds). A listing too early for a lookup past
its settle time is taken again, once for every lookup waiting on the lock. When a
listing fails, the lookups that waited for it get its failure (no listing of their own): the failed lookups
are tried again in the caller's next round, one listing for all of them.

Every fit is checked locally as find_created does (tasks/lookup.fits, choose_created: never a video
another ledger entry owns); the listing is unfiltered by title, so a title the service tidied is found in
the same listing. Videos deleted through this run are forgotten (forget()), so an old listing never offers
one. While the service's clock is unknown the lookup is find_created's own (a day's reach, title filter).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from videoferry.connectors.errors import VideoApiError
from videoferry.connectors.ids import try_normal_id
from videoferry.connectors.models import Video
from videoferry.tasks.lookup import (
    SETTLE_SECONDS,
    SentCreate,
    choose_created,
    find_created,
    service_bound,
    settle_start,
)

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient

#: A listing older than this is never reused (taken again): the service may have changed since.
LISTING_MAX_AGE = timedelta(seconds=60)
#: How far below a lookup's own bound a listing may reach to cover older open intents of the same round.
EXTRA_REACH = timedelta(seconds=300)


@dataclass(frozen=True)
class Listing:
    """A parent's videos newest first down to `bound` (service clock), taken at `taken_at` (our clock)."""

    taken_at: datetime
    bound: datetime
    videos: tuple[Video, ...]


@dataclass
class _Parent:
    lock: threading.Lock = field(default_factory=threading.Lock)
    listing: Listing | None = None
    #: The last failure of a listing, and when (monotonic) it ended: given to the lookups that waited for it.
    failure: VideoApiError | None = None
    failed_at: float = 0.0


@dataclass
class SharedListings:
    """The run's shared lookup listings, one per parent (see the module's docstring); thread-safe."""

    listings: int = 0  #: listings taken (each is one or more list calls, one per page)
    _parents: dict[str, _Parent] = field(default_factory=dict)
    _gone: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def forget(self, video_id: str) -> None:
        """A video deleted in this run: no kept listing offers it again."""
        with self._lock:
            self._gone.add(video_id)

    def _parent(self, parent: str | None) -> _Parent:
        key = try_normal_id(parent) or (parent or "")
        with self._lock:
            return self._parents.setdefault(key, _Parent())

    def find(
        self,
        client: VideoClient,
        sent: SentCreate,
        owners: Callable[[Sequence[str]], dict[str, str]],
        *,
        scope: tuple[str, str] | None = None,
        reach: datetime | None = None,
        after: datetime | None = None,
    ) -> Video | None:
        """The video this create made, from a shared listing (taken when none kept can answer); None: not
        there (believed by the caller only after the settle time, which a None here respects).

        scope: the list filter for the parent ("project_id" or "folder_id", id), None: unfiltered;
        reach: the oldest open intent (our clock) a new listing should cover besides this one's; after: a
        kept listing answers only when taken at or after this moment as well (an early look wants one taken
        after the answer was lost, not one taken while the create was still on its way). A failed listing
        raises its VideoApiError (also to the lookups that waited for it).
        """
        bound, clock_known = service_bound(client, sent.intent_at)
        if bound is None or not clock_known or sent.intent_at is None:
            return find_created(client, sent, owners)
        intent_at = sent.intent_at
        entered = time.monotonic()
        entry = self._parent(sent.parent_id)
        with entry.lock:
            kept = entry.listing
            if after is not None and kept is not None and kept.taken_at < after:
                kept = None
            answer = self._answer(kept, sent, owners, bound, intent_at)
            if answer is not None:
                return answer[0]
            if entry.failure is not None and entry.failed_at >= entered:
                raise entry.failure  # the listing this lookup waited for failed: not one more call
            lowest = bound
            if reach is not None and reach < intent_at:
                wider, known = service_bound(client, reach)
                if known and wider is not None:
                    lowest = max(min(wider, bound), bound - EXTRA_REACH)
            taken_at = datetime.now(UTC)
            try:
                name, ident = scope or ("", None)
                videos = tuple(
                    client.videos.scan(
                        newer_than=lowest,
                        project_id=ident if name == "project_id" else None,
                        folder_id=ident if name == "folder_id" else None,
                    )
                )
            except VideoApiError as exc:
                entry.failure, entry.failed_at = exc, time.monotonic()
                raise
            finally:
                with self._lock:  # parents list at once under their own locks: the count is shared
                    self.listings += 1
            entry.listing = Listing(taken_at, lowest, videos)
            entry.failure = None
            answer = self._answer(entry.listing, sent, owners, bound, intent_at)
            return answer[0] if answer is not None else None

    def seen(
        self, client: VideoClient, sent: SentCreate, owners: Callable[[Sequence[str]], dict[str, str]]
    ) -> Video | None:
        """The video this create made when the listing kept now shows it (taken after the intent, reaching
        down far enough); None otherwise. No call is made, and none waits for a listing being taken: for a
        lookup too early to believe "not there", which can still believe "there"."""
        bound, clock_known = service_bound(client, sent.intent_at)
        if bound is None or not clock_known or sent.intent_at is None:
            return None
        entry = self._parent(sent.parent_id)
        if not entry.lock.acquire(blocking=False):
            return None  # a listing is being taken: the lookup after the settle time reads it
        try:
            answer = self._answer(entry.listing, sent, owners, bound, sent.intent_at)
        finally:
            entry.lock.release()
        return answer[0] if answer is not None else None

    def _answer(
        self,
        listing: Listing | None,
        sent: SentCreate,
        owners: Callable[[Sequence[str]], dict[str, str]],
        bound: datetime,
        intent_at: datetime,
    ) -> tuple[Video | None] | None:
        """What a kept listing says of this lookup: (video,) found, (None,) not there (or too early for the
        caller to believe it: no new listing could say more yet), None when a new listing is needed."""
        now = datetime.now(UTC)
        if listing is None or listing.bound > bound or listing.taken_at < intent_at:
            return None
        if now - listing.taken_at > LISTING_MAX_AGE:
            return None
        with self._lock:
            gone = frozenset(self._gone)
        visible = [v for v in listing.videos if v.id not in gone]
        found = choose_created(visible, sent, owners, bound=bound, clock_known=True)
        settled_at = settle_start(sent.owner, intent_at) + timedelta(seconds=SETTLE_SECONDS)
        if found is not None or listing.taken_at >= settled_at or now < settled_at:
            return (found,)
        return None
