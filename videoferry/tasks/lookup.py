"""Finding the object a create made when its answer was lost: the rules every job that creates shares.

The service has no Idempotency-Key, so a create whose outcome is unknown is looked up before anything is
sent again (spec 7, rule 4). Whatever the service chose where the spec is silent, a lookup here trusts only
what it can check itself: it lists newest first down to the intent time converted to the service's clock,
verifies locally every filter it asked the server for (the title as a service may keep it, parent in any id
notation, not deleted, created after the bound, size when known), never takes an object another ledger entry
owns, and says "not there" only once the listing has had time to show it. Every job's lookup after a lost
answer follows these rules through tasks/exactly_once.py: migrate's items and apply's copies, concats and cuts
(SentCreate, find_created), setup's events, restreams, code batches and domains (find_named), check --adopt's
matching (same_title).

A service may keep what it was sent in another form (core/tidy.py: whitespace collapsed and trimmed, NFC, a
title cap), so a title or name is compared by core.tidy's rules, never byte for byte, and the server's own
title filter (which compares with what it stored) is never trusted to find a tidied title: when the filtered
listing shows nothing, the lookup lists again without it, newest first down to the same bound. A title no
tidying changes (a marker: core.tidy.survives_tidying) needs no second listing. Items whose titles a tidying
service could make alike are created under such a marker (core.tidy.title_group_key, shared_title_groups), so
a lookup can only find its own create.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from videoferry.connectors.ids import same_id, try_normal_id
from videoferry.connectors.models import Video
from videoferry.core.tidy import same_text, same_title, shared_title_groups, survives_tidying, title_group_key

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient

#: A "not there" verdict needs a listing taken at least this long after the call's answer was lost (counted
#: from settle_start(): the first look, never before the intent): a service whose lists are fed by an index
#: shows a new object only some seconds after its create (the emulator's list-lag variant: 3 s).
SETTLE_SECONDS = 15.0
#: The longest a lookup waits while it cannot tell (a listing that keeps failing, several candidates): after
#: it the intent stays open (Postponed) for the caller's next round or the next run, which settles it first.
LOOKUP_WAIT_SECONDS = 60.0
#: Added to the learned clock uncertainty: whole-second created_at values and the service's own jitter.
CLOCK_MARGIN = timedelta(seconds=5)
#: How far back a lookup reaches while the service's clock is unknown (then only a single match counts).
UNKNOWN_CLOCK_REACH = timedelta(days=1)

T = TypeVar("T")


class Postponed(Exception):
    """A lookup could not decide now (listing failed, several candidates, or too early to say "none")."""


class TooEarly(Postponed):
    """A lookup found nothing but was too early to believe "not there": it can tell in `wait` seconds."""

    def __init__(self, ref: str, wait: float) -> None:
        super().__init__(ref)
        self.wait = wait


@dataclass(frozen=True)
class SentCreate:
    """What one create sent, as far as a lookup can check it."""

    owner: str  #: the ledger key the created object belongs to
    title: str  #: the title sent (its core.tidy.title_group_key unique per parent within a ledger)
    parent_id: str | None
    intent_at: datetime | None  #: our clock, when the intent was written
    size: int | None = None  #: bytes of the source, when known


def service_bound(client: VideoClient, intent_at: datetime | None) -> tuple[datetime | None, bool]:
    """The earliest service-clock creation time of what a create sent at intent_at made; clock known?

    Our intent time is converted to the service's clock (learned from its Date headers), minus the
    estimate's uncertainty and a margin, so a service whose clock is minutes off is handled like one that
    agrees. While the clock is unknown, the bound reaches back a day and only a single match is taken.
    """
    if intent_at is None:
        return None, True
    clock = client.clock
    if clock.offset() is None:
        return intent_at - UNKNOWN_CLOCK_REACH, False
    return clock.to_service(intent_at) - timedelta(seconds=clock.uncertainty()) - CLOCK_MARGIN, True


def original_size(video: Video) -> int | None:
    """The size of the video's original asset, when the service kept one (spec convention 7)."""
    for asset in video.assets or []:
        if asset.quality == "original" and asset.file_size is not None:
            return asset.file_size
    return None


def fits(video: Video, sent: SentCreate, bound: datetime | None) -> bool:
    """Everything checkable locally: the title as a service may keep it (core.tidy.same_title), parent, not
    deleted, created after the bound, size."""
    if not same_title(sent.title, video.title or "") or video.deleted_at is not None:
        return False
    parent = sent.parent_id
    if parent and not (same_id(parent, video.project_id) or same_id(parent, video.folder_id)):
        return False
    if bound is not None and (video.created_at is None or video.created_at < bound):
        return False
    size = original_size(video)
    return size is None or sent.size is None or size == sent.size


def find_created(
    client: VideoClient, sent: SentCreate, owners: Callable[[Sequence[str]], dict[str, str]]
) -> Video | None:
    """The video this create made, if the service shows it; never one another owner holds.

    owners maps video ids to the keys that already own them (the ledger). Scans newest first down to the
    bound (one call per page), filtered by title; when that shows nothing and the title is one a service may
    tidy, once more without the filter (listed_created). Several unowned matches with the clock unknown:
    Postponed.
    """
    bound, clock_known = service_bound(client, sent.intent_at)
    listed = listed_created(client, sent, bound)
    return choose_created(listed, sent, owners, bound=bound, clock_known=clock_known)


def besides(
    owners: Callable[[Sequence[str]], dict[str, str]], sources: Collection[str]
) -> Callable[[Sequence[str]], dict[str, str]]:
    """owners, with the sources of a call (the videos it was made on, which existed before it) held as well:
    a result that looks like its source (same title, same place) is never taken for the source."""
    held = frozenset(sources)

    def owned(ids: Sequence[str]) -> dict[str, str]:
        return {**owners(ids), **{i: "source" for i in ids if i in held}}

    return owned


def choose_created(
    listed: Iterable[Video],
    sent: SentCreate,
    owners: Callable[[Sequence[str]], dict[str, str]],
    *,
    bound: datetime | None,
    clock_known: bool,
) -> Video | None:
    """Among listed videos, the one this create made (find_created's choice, for a listing already made):
    those that fit, none another owner holds, the oldest; several with the clock unknown: Postponed."""
    candidates = [v for v in listed if fits(v, sent, bound)]
    if not candidates:
        return None
    owned = owners([v.id for v in candidates])
    mine = [v for v in candidates if owned.get(v.id, sent.owner) == sent.owner]
    if not clock_known and len(mine) > 1:
        raise Postponed(sent.owner)
    mine.sort(key=lambda v: v.created_at or datetime.min.replace(tzinfo=UTC))
    return mine[0] if mine else None


def listed_created(client: VideoClient, sent: SentCreate, bound: datetime | None) -> list[Video]:
    """The videos of the listing that fit what the create sent, newest first.

    The server's title filter compares with the form it stored, so a title it tidied or cut is not found by
    it: when the filtered scan shows nothing that fits, an unfiltered one (newest first, down to the same
    bound) is read, unless the title is a marker no tidying changes.
    """
    found = [v for v in client.videos.scan(title=sent.title, newer_than=bound) if fits(v, sent, bound)]
    if found or survives_tidying(sent.title):
        return found
    return [v for v in client.videos.scan(newer_than=bound) if fits(v, sent, bound)]


def find_named(
    objects: Iterable[T], name: str, name_of: Callable[[T], str | None], *, fold_case: bool = False
) -> list[T]:
    """The objects whose name is `name` as a service may keep it (core.tidy.same_text: whitespace, NFC);
    fold_case: names compared case-insensitively too (domains)."""

    def fold(value: str) -> str:
        return value.lower() if fold_case else value

    return [obj for obj in objects if same_text(fold(name), fold(name_of(obj) or ""))]


def shared_titles(rows: Iterable[tuple[str | None, str]]) -> frozenset[tuple[str, str]]:
    """The (parent, title_group_key) pairs several of the given (parent, title) rows fall in (parents in any
    id notation): items there are created under a marker, since a tidying service could make their titles
    alike."""
    return shared_title_groups((try_normal_id(parent) or "", title) for parent, title in rows)


def is_shared(groups: frozenset[tuple[str, str]], parent: str | None, title: str) -> bool:
    """Whether a (parent, title) falls in one of the shared groups (shared_titles)."""
    return (try_normal_id(parent) or "", title_group_key(title)) in groups


class _SettleStarts:
    """When this process first looked for the outcome of each open intent: the start of its settle time.

    A call may be made long after its intent was written (it waited for the limiter's admission, or the
    service took its time to answer) and the service may make the object at any moment until the answer was
    lost, so the settle time counts from when this process first looked (right after the lost answer, or,
    for an intent a crashed run left open, when this run found it): never from before the call ended.
    Lookups run only for a call that has ended, so the first look is after the loss.
    """

    #: Beyond this many entries, those first looked at over PRUNE_AFTER ago are forgotten (long settled).
    KEEP = 4096
    PRUNE_AFTER = timedelta(hours=1)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first: dict[tuple[str, datetime], datetime] = {}

    def start(self, owner: str | int, intent_at: datetime) -> datetime:
        """The later of the intent and this process's first look for its outcome (now, the first time)."""
        now = datetime.now(UTC)
        with self._lock:
            first = self._first.setdefault((str(owner), intent_at), now)
            if len(self._first) > self.KEEP:
                old = now - self.PRUNE_AFTER
                self._first = {k: v for k, v in self._first.items() if v >= old}
        return max(first, intent_at)


_STARTS = _SettleStarts()


def settle_start(owner: str | int, intent_at: datetime) -> datetime:
    """When the settle time of this intent's lost answer began (our clock): the later of the intent and this
    process's first look for its outcome."""
    return _STARTS.start(owner, intent_at)


def settle_remaining_at(intent_at: datetime | None, owner: str | int) -> float:
    """Seconds until "not found" can be believed of a call whose intent (of `owner`) was written at intent_at
    (0: now): SETTLE_SECONDS after settle_start()."""
    if intent_at is None:
        return 0.0
    begun = settle_start(owner, intent_at)
    return max(0.0, SETTLE_SECONDS - (datetime.now(UTC) - begun).total_seconds())


def settle_remaining(sent: SentCreate) -> float:
    """Seconds until "not found" can be believed of this create (0: now)."""
    return settle_remaining_at(sent.intent_at, sent.owner)


def settled(sent: SentCreate) -> bool:
    """Whether "not found" can be believed: any listing taken from now on has had the settle time to show
    the object, made at the latest when the answer was lost."""
    return settle_remaining(sent) <= 0.0
