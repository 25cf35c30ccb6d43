"""Check: list the destination parents (one call per 100 videos) and find each item's video in them.

Nothing the server filters is trusted: every listed video is checked here for its parent (any id notation) and
`deleted_at`. An item's video is the one its ledger entry names, else the one video in its parent with its
title as a service may keep it (core.tidy.same_title: tidied, or cut by a cap) or with one of the item's
placeholders (a create whose finish step never ran: connectors.titles.placeholder_titles), narrowed by its
source's size when several have it or other rows' titles could look alike (core.tidy.title_group_key); a video
another ledger entry owns is never taken.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from videoferry.connectors.client import VideoClient
from videoferry.connectors.errors import NotFoundError, VideoApiError
from videoferry.connectors.ids import try_normal_id
from videoferry.connectors.models import Video
from videoferry.connectors.titles import placeholder_titles
from videoferry.core.item import ItemSpec
from videoferry.core.tidy import same_title, title_group_key
from videoferry.tasks.check.compare import in_parent
from videoferry.tasks.lookup import original_size

#: The list's page size: one call covers up to this many videos.
PAGE_SIZE = 100


@dataclass
class Listing:
    """Every live video of the checked parents, by normal id, and which parent each was listed under."""

    videos: dict[str, Video] = field(default_factory=dict)
    by_parent: dict[str, list[str]] = field(default_factory=dict)
    _titles: dict[tuple[str, str], list[Video]] | None = field(default=None, init=False, repr=False)

    def in_parent(self, parent_id: str) -> list[Video]:
        """The videos listed under one parent, newest first."""
        return [self.videos[vid] for vid in self.by_parent.get(parent_id, [])]

    def titled(self, parent_id: str, title: str) -> list[Video]:
        """The videos listed under one parent whose title is this one as a service may keep it
        (core.tidy.same_title), newest first (indexed once by title_group_key)."""
        if self._titles is None:
            self._titles = {}
            for parent, ids in self.by_parent.items():
                for vid in ids:
                    video = self.videos[vid]
                    self._titles.setdefault((parent, title_group_key(video.title or "")), []).append(video)
        alike = self._titles.get((parent_id, title_group_key(title)), [])
        return [v for v in alike if same_title(title, v.title or "")]


def _walk(client: VideoClient, parent: str, scope: str | None) -> list[Video]:
    filters = {scope: parent} if scope else {}
    listed = client.videos.iter(order="created_at.desc", per_page=PAGE_SIZE, **filters)
    found = [v for v in listed if v.deleted_at is None and in_parent(v, parent)]
    # The list answers videos (spec 4.1); a record that is a project or folder (its id the parent's, or a
    # listed video's folder_id) is not one, whatever a service lists.
    containers = {try_normal_id(i) or i for i in (parent, *(v.folder_id for v in found)) if i}
    return [v for v in found if (try_normal_id(v.id) or v.id) not in containers]


def list_destination(client: VideoClient, parents: Iterable[str]) -> Listing:
    """List each parent newest first (as a project; when that shows none of its videos, as a folder).

    An empty parent lists the whole workspace. Raises VideoApiError when a listing fails (AuthError first).
    """
    dest = Listing()
    for parent in dict.fromkeys(parents):
        found = _walk(client, parent, "project_id" if parent else None)
        if parent and not found:
            found = _walk(client, parent, "folder_id")
        ids: list[str] = []
        for video in found:
            vid = try_normal_id(video.id) or video.id
            dest.videos.setdefault(vid, video)
            ids.append(vid)
        dest.by_parent[parent] = ids
    return dest


#: How a match says it took the oldest of several videos that fit (check --adopt).
OLDEST = "title, the oldest of"


@dataclass
class Match:
    """Where an item's video was found (how: ledger or title), or why none could be named (problem)."""

    spec: ItemSpec
    video: Video | None = None
    how: str = ""
    problem: str = ""
    ambiguous: tuple[str, ...] = ()  #: the candidates when several videos could be this item's
    error: bool = False  #: the problem is a failure to look, not an absence


def _by_ledger(client: VideoClient, spec: ItemSpec, video_id: str, dest: Listing) -> Match:
    """The video the ledger names: from the listing, else one GET (it may have moved, or be gone)."""
    normal = try_normal_id(video_id) or video_id
    if normal in dest.videos:
        return Match(spec, dest.videos[normal], "ledger")
    try:
        video = client.videos.get(video_id)
    except NotFoundError:
        return Match(spec, problem=f"the ledger's video {video_id} is gone (404)")
    except VideoApiError as exc:
        return Match(
            spec, problem=f"the ledger's video {video_id} could not be read ({exc.code})", error=True
        )
    if video.deleted_at is not None:
        return Match(spec, problem=f"the ledger's video {video_id} is deleted")
    return Match(spec, video, "ledger")


def match_items(
    client: VideoClient,
    specs: list[ItemSpec],
    dest: Listing,
    ledger_ids: Mapping[str, str],
    owners: Mapping[str, str],
    size_of: Callable[[ItemSpec], int | None],
    *,
    oldest: bool = False,
) -> list[Match]:
    """Each item's video: the ledger's id first (for every item), then title (and size) in its parent.

    ledger_ids maps item keys to their recorded video ids; owners maps normal video ids to the ledger entry
    owning them (never taken for another item). size_of gives an item's source size (read only when needed).
    oldest (check --adopt): when several videos of its parent fit an item no other row shares the title
    with, the oldest is taken (the one first made under that title; the later ones are copies of it).
    """
    claimed: set[str] = set()
    matches: dict[str, Match] = {}
    for spec in specs:
        if spec.key in ledger_ids:
            match = _by_ledger(client, spec, ledger_ids[spec.key], dest)
            matches[spec.key] = match
            if match.video is not None:
                claimed.add(try_normal_id(match.video.id) or match.video.id)
    rest = [s for s in specs if s.key not in matches]
    shared = Counter((s.parent_id, title_group_key(s.title)) for s in rest)
    for spec in rest:
        titled = dest.titled(spec.parent_id, spec.title)
        for marker in placeholder_titles(spec.key):  # created under its marker; the finish step never ran
            titled += dest.titled(spec.parent_id, marker)
        free = [
            v
            for v in dict((v.id, v) for v in titled).values()
            if v.id not in claimed and owners.get(v.id, spec.key) == spec.key
        ]
        alone = shared[(spec.parent_id, title_group_key(spec.title))] == 1
        match = _by_title(spec, free, size_of, alone=alone)
        if oldest and alone and match.ambiguous:
            match = _oldest(spec, [v for v in free if v.id in match.ambiguous]) or match
        matches[spec.key] = match
        if match.video is not None:
            claimed.add(match.video.id)
    return [matches[s.key] for s in specs]


def _by_title(
    spec: ItemSpec, free: list[Video], size_of: Callable[[ItemSpec], int | None], *, alone: bool
) -> Match:
    """One video by title (or placeholder), narrowed by the source's size when several (or other items whose
    titles could look alike) share it."""
    if not free:
        return Match(spec, problem="no video with its title in its parent")
    if len(free) == 1 and alone:
        return Match(spec, free[0], "title")
    size = size_of(spec)
    sized = [v for v in free if size is not None and original_size(v) == size]
    if len(sized) == 1:
        return Match(spec, sized[0], "title+size")
    if not sized and not alone:
        return Match(spec, problem="no video with its title and its source's size in its parent")
    ids = tuple(v.id for v in (sized or free))
    return Match(
        spec,
        problem=f"{len(ids)} videos in its parent have its title"
        + (" and size" if sized else "")
        + "; cannot tell which is this item's",
        ambiguous=ids,
    )


def _oldest(spec: ItemSpec, fits: list[Video]) -> Match | None:
    """The one video created first among several that fit (None: a creation time is missing or shared)."""
    dated = [(v.created_at, v) for v in fits if v.created_at is not None]
    if len(dated) != len(fits) or len({t for t, _ in dated}) != len(dated):
        return None
    first = min(dated, key=lambda tv: tv[0])[1]
    return Match(spec, first, f"{OLDEST} {len(fits)}", ambiguous=())
