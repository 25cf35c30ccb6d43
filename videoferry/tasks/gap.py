"""The replication gap: a run whose restored ledger may miss what its last holder did looks up, before it
creates anything, whatever the copy does not show as settled (one listing for the whole run, the lookup rules
of tasks/lookup.py), and says when it has looked everything up.

A remote ledger (connectors/ledger_remote.py) is replicated asynchronously: a run killed between a create and
the replication of its outcome leaves a replica that does not know the video. The next run restores a copy
that "may be behind" (`home.behind_reason`). What the lost run can have made is bounded by the gap mark the
ledger keeps (tasks/gap_mark.py): on the service's own clock, a moment by which the earliest run whose writes
may be missing held the ledger. The one listing every lookup of the run reads is the workspace, newest first,
down to just past it (one call per 100 videos created since), taken before this run creates anything and no
sooner than the settle time after this run took the lock (lists may lag: the lost run may have made a video
just before its lease ended); a video is a lost run's only when its created_at is provably after the mark
(Gap.bound), so a video that existed before (an original migrated with another ledger, a copy's own source,
same title, same place) is never taken for the result it looks like. No mark known: the lookup cannot tell,
adopts nothing, and the run does what the ledger does not show done (said once as a warning).

Which ledger entries are subjects (not settled, so a lost run may have made them) each job declares in its
wing (tasks/migrate/gap.py, tasks/apply/gap.py, tasks/archive/recording.py), and the run's Gap is given them
(flows/job_remote.hold_on); how a subject is found before its call is one step of the exactly-once sequence
(tasks/exactly_once.GapCheck: found, the adoption is written as the call's intent, then found). This module
keeps the listing and its bookkeeping: look() records each subject looked up (GapAmbiguous when several
videos could be it), complete() says when every subject was looked up, and only then may the home be
marked reconciled: a run that touched part of the ledger leaves the gap open for the next.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from videoferry.connectors.models import Video
from videoferry.tasks.lookup import Postponed, SentCreate, besides, choose_created

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient
    from videoferry.state.ledger import Ledger

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A job's gap subjects: the keys of the ledger's entries it does not show settled (each job's wing).
SubjectsOf = Callable[["Ledger"], Iterable[str]]


class GapAmbiguous(Postponed):
    """Several videos of the gap's listing could be the subject's and cannot be told apart: nothing is made
    for it (a person checks them; a rerun looks again)."""


class GapListingFailed(Exception):
    """The listing every gap lookup reads could not be made: nothing may be created for a gap subject (the
    run stops; exit status 1, a rerun lists again)."""


@dataclass
class Gap:
    """One run's view of the replication gap: why, since when, the one listing, and what was looked up."""

    reason: str
    since: datetime | None  #: this machine's clock: when the lost run started, as the lock tells (or None)
    taken: datetime | None = None  #: the gap mark (service clock, tasks/gap_mark.py); None: cannot tell
    subjects: Sequence[SubjectsOf] = ()  #: every job's subjects (flows/job_remote.hold_on gives them)
    #: time.monotonic() before which the listing is not taken (None: at once): the settle time after this run
    #: took the lock, so a create the lost run made just before its lease ended has had a lagging list's
    #: time to show it (tasks/lookup.SETTLE_SECONDS; flows/job_remote.hold_on sets it)
    listable_at: float | None = None
    looked: set[str] = field(default_factory=set)
    unresolved: dict[str, str] = field(default_factory=dict)  #: subject -> why it could not be told
    listed_calls: int = 0
    _videos: list[Video] | None = field(default=None, repr=False)
    _failed: str = field(default="", repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def bound(self) -> datetime | None:
        """The earliest created_at a lost run's video can have (service clock): just past the mark; None when
        no mark is known (nothing can be told)."""
        if self.taken is None:
            return None
        return self.taken + timedelta(microseconds=1)

    def listing(self, client: VideoClient) -> list[Video]:
        """Every live video created after the gap mark, newest first: listed once for the run (on the first
        call), one list call per 100 videos; none without a mark. GapListingFailed when the service would
        not list."""
        from videoferry.connectors.errors import AuthError, VideoApiError

        with self._lock:
            if self._failed:
                raise GapListingFailed(self._failed)
            if self._videos is None and self.bound is None:
                log.warning(
                    "replication gap: the ledger keeps no gap mark, so no video can be told as the lost"
                    " run's: what the ledger does not show done is done again"
                )
                self._videos = []
            if self._videos is None:
                self._wait_until_listable()
                try:
                    self._videos = list(client.videos.scan(newer_than=self.bound))
                except AuthError:
                    raise
                except VideoApiError as exc:
                    self._failed = f"the destination could not be listed for the gap ({exc.code}): {exc}"
                    raise GapListingFailed(self._failed) from None
                self.listed_calls = max(1, -(-len(self._videos) // 100))
                log.info("replication gap: %d video(s) created since its mark", len(self._videos))
            return self._videos

    def _wait_until_listable(self) -> None:
        """Wait (once, before the one listing) until listable_at: "not there" from the listing is believed."""
        wait = 0.0 if self.listable_at is None else self.listable_at - time.monotonic()
        if wait > 0:
            log.info("replication gap: listing in %.1f s (lists may lag behind the lost run's creates)", wait)
            time.sleep(wait)

    def look(self, subject: str, find: Callable[[], T | None]) -> T | None:
        """What find() tells of the subject (None: nothing there); the subject counts as looked up. A
        GapAmbiguous from find is recorded as unresolved (the gap stays open) and raised again."""
        try:
            found = find()
        except GapAmbiguous:
            with self._lock:
                self.unresolved[subject] = "several videos could be its create's; cannot tell which"
            raise
        finally:
            with self._lock:
                self.looked.add(subject)
        with self._lock:
            self.unresolved.pop(subject, None)
        return found

    def created(
        self,
        client: VideoClient,
        sents: Sequence[SentCreate],
        owners: Callable[[Sequence[str]], dict[str, str]],
        sources: Collection[str] = (),
    ) -> Video | None:
        """The video one of `sents` (the ways a create can have been sent) made during the gap, never one
        another ledger entry owns nor one of `sources` (the ids the call was made on: they existed before
        it); tasks/lookup.choose_created over the run's one listing, bounded by the mark. GapAmbiguous when
        several videos could be it and cannot be told apart."""
        videos = self.listing(client)
        held = besides(owners, sources)
        try:
            for sent in sents:
                found = choose_created(videos, sent, held, bound=self.bound, clock_known=True)
                if found is not None:
                    return found
        except GapAmbiguous:
            raise
        except Postponed as exc:
            raise GapAmbiguous(str(exc)) from None
        return None

    def find(
        self,
        client: VideoClient,
        subject: str,
        sents: Sequence[SentCreate],
        owners: Callable[[Sequence[str]], dict[str, str]],
        sources: Collection[str] = (),
    ) -> Video | None:
        """created(), with the subject counted as looked up (look())."""
        return self.look(subject, lambda: self.created(client, sents, owners, sources))

    def pending(self, subject: str) -> bool:
        """Whether the subject still has to be looked up before its create (not yet in this run)."""
        with self._lock:
            return subject not in self.looked

    def mark_looked(self, subject: str) -> None:
        """Record a subject as looked up with nothing to list (a call durable or repeatable)."""
        with self._lock:
            self.looked.add(subject)
            self.unresolved.pop(subject, None)

    def unsettled(self, ledger: Ledger) -> list[str]:
        """The subjects (every job's: self.subjects) the ledger does not show settled and this run has not
        looked up (empty: complete)."""
        subjects = [key for subjects_of in self.subjects for key in subjects_of(ledger)]
        with self._lock:
            return [s for s in subjects if s not in self.looked or s in self.unresolved]

    def complete(self, ledger: Ledger) -> bool:
        """Whether every subject the ledger does not show settled was looked up in this run (then the home
        may be marked reconciled)."""
        return not self._failed and not self.unsettled(ledger)
