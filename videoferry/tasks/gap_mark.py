"""The gap mark: by when a run held its remote ledger, on the service's clock, kept before its first create.

It lets a later run's gap lookup (tasks/gap.py) adopt only what a lost run can have made. A run that holds a
remote ledger lists one video right after it took the lock: the answer's Date header (connectors/clock.py)
bounds the service's time then, and the video's created_at tells the precision the service keeps it with
(whole seconds: 1 s; the spec's fractional seconds: their last digit). The mark is an upper bound of the
service's time at a moment the run already held the ledger (our time then, plus the clock's offset and its
uncertainty) plus that precision: every video that existed before the run took the ledger has a created_at at
most the mark. The run then creates nothing until the service's clock is provably past the mark by that
precision (hold(): about a second, up to 3 s when the precision cannot be told; spent only by a first create
that comes that early), so every video it creates has a created_at after the mark. A video is therefore taken
as a lost run's only when its created_at is after the mark (Gap.bound): the two sets never meet, whatever the
two clocks say.

The ledger keeps one mark (meta key GAP_MARK_KEY): the mark of the earliest run whose writes may be missing
from a copy restored later. A run whose restored copy is complete (nothing behind) keeps its own; a run whose
copy may be behind keeps the restored one (the earlier run's, or earlier still), and its own once it has
looked everything up (the gap closed). It is written and pushed to S3 before the run's first create: a run
killed before that created nothing. No mark known (the service sent no Date header, a ledger from before
marks were kept): the gap lookup cannot tell a lost run's video from an older one and adopts none.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from videoferry.connectors.ledger_errors import RemoteLedgerLostError

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient
    from videoferry.connectors.clock import ServiceClock
    from videoferry.state.ledger import Ledger

log = logging.getLogger(__name__)

#: The ledger's meta key of the gap mark (service clock, UTC text; '' when unknown).
GAP_MARK_KEY = "gap_mark"
#: How far a created_at may lie from the creation's true time on the service's clock when the precision
#: cannot be told (no video listed, or whole seconds: truncated up to 1 s, rounded up to 0.5 s).
CREATED_PRECISION = timedelta(seconds=1)
#: The longest hold() waits: far more than the clock's uncertainty plus the precision ever needs.
HOLD_LIMIT_SECONDS = 60.0


class GapMarkError(RemoteLedgerLostError):
    """The service's clock could not be made to pass the mark in time: no create may be made (the run stops
    as when its ledger is lost: exit status 1, rerun)."""


@dataclass
class GapMark:
    """This run's mark (None: the service's clock is unknown), and the hold on its first create."""

    at: datetime | None  #: service clock: no video made before this run held the ledger is stamped later
    clock: ServiceClock | None = field(default=None, repr=False)
    precision: timedelta = CREATED_PRECISION  #: of the service's created_at
    _passed: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def hold(self) -> None:
        """Return once the service's clock is provably more than the precision past the mark (at once after
        the first time): every video this run creates from now on has a created_at after the mark."""
        if self._passed or self.at is None or self.clock is None:
            return
        with self._lock:  # one worker waits (and says so), the others behind it
            self._wait(self.at, self.clock)

    def _wait(self, mark: datetime, clock: ServiceClock) -> None:
        deadline = time.monotonic() + HOLD_LIMIT_SECONDS
        while not self._passed:
            offset = clock.offset()
            if offset is None:  # the clock was learned at the mark: it is never forgotten
                raise GapMarkError("the service's clock is unknown")
            earliest = datetime.now(UTC) + timedelta(seconds=offset - clock.uncertainty())
            remaining = (mark + self.precision - earliest).total_seconds()
            if remaining <= 0:
                self._passed = True
                return
            if time.monotonic() + remaining > deadline:
                raise GapMarkError(
                    f"the service's clock is not known well enough to create after the gap mark ({clock!r});"
                    " rerun"
                )
            log.info("the first create waits %.2f s for the service's clock to pass the mark", remaining)
            time.sleep(remaining)


def precision_of(created_at: datetime | None) -> timedelta:
    """The precision a service keeps created_at with, told by one value: its last non-zero decimal digit of a
    second (a coincidence of zeros only makes it coarser); whole seconds, or none: CREATED_PRECISION."""
    if created_at is None or created_at.microsecond == 0:
        return CREATED_PRECISION
    step = 1
    while created_at.microsecond % (step * 10) == 0:
        step *= 10
    return timedelta(microseconds=step)


def take_mark(client: VideoClient) -> GapMark:
    """The mark of a run that holds its remote ledger now: one list call (its Date header, the precision of
    its video's created_at). Call after the lock is taken and before anything is created."""
    page = client.videos.list(page=1, per_page=1)
    precision = precision_of(page.items[0].created_at if page.items else None)
    clock = client.clock
    offset = clock.offset()
    if offset is None:
        log.warning("the service sent no Date header: a later run cannot tell this run's videos in a gap")
        return GapMark(None)
    latest = datetime.now(UTC) + timedelta(seconds=offset + clock.uncertainty())
    return GapMark(latest + precision, clock, precision)


def restored_mark(book: Ledger) -> datetime | None:
    """The mark the ledger keeps: that of the earliest run whose writes may be missing (None: unknown)."""
    try:
        moment = datetime.fromisoformat(book.setting(GAP_MARK_KEY) or "")
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def keep_mark(book: Ledger, mark: GapMark) -> None:
    """Keep this run's mark as the ledger's: nothing before this run can be missing from the ledger."""
    text = "" if mark.at is None else mark.at.astimezone(UTC).isoformat(timespec="microseconds")
    book.keep_setting(GAP_MARK_KEY, text)


def open_mark(
    book: Ledger, client: VideoClient, *, behind: bool, push: Callable[[], Any]
) -> tuple[GapMark, datetime | None]:
    """A run's mark taken and kept (when its copy is complete, or keeps no mark), then pushed to S3 (push)
    before the run starts; with the mark the ledger kept (None: none, or unknown), which bounds the gap."""
    mark = take_mark(client)
    kept = restored_mark(book)
    if not behind or kept is None:
        keep_mark(book, mark)
    push()
    return mark, kept
