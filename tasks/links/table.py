"""The links map: which new video replaced which old one, from the ledger (items migrate made, videos apply's
copy, concat and cut made) and one read-only listing of the destination for each video's player links."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from connectors.client import VideoClient
from connectors.errors import AuthError, NotFoundError, VideoApiError
from connectors.ids import same_id, try_normal_id
from connectors.models import Video
from core.item import COMPLETE_STATES, SourceKind, source_kind
from core.platform_keys import platform_key, read_player_ids
from core.redact import safe_uri
from state.machine import UnitState
from state.reader import LedgerReader
from tasks.check.explain import MAKES
from tasks.check.listing import list_destination
from tasks.links.platforms import alias_embed_url, embed_url, page_url

#: The columns of the map, in order (csv header, json keys).
COLUMNS = (
    "source",
    "source_page",
    "source_embed",
    "video_id",
    "play_link",
    "embed_link",
    "title",
    "key",
    "made_by",
)


@dataclass(frozen=True)
class LinkRow:
    """One old -> new line: the source (a URL without its query, `platform:id`, a path, `video:ID` for what
    apply made), its page and embed URLs where known, and the new video with its player links."""

    source: str
    source_page: str
    source_embed: str
    video_id: str
    play_link: str
    embed_link: str
    title: str
    key: str
    made_by: str
    #: Other keys its old player URLs name it by (`mux:<playback id>`): rewrite-embeds maps them too.
    aliases: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, str]:
        """The row by column name."""
        return {name: getattr(self, name) for name in COLUMNS}


@dataclass
class LinksMap:
    """The rows, and what was left out: per reason, with a count (not done, gone from the service...)."""

    rows: list[LinkRow] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)

    def left_out_lines(self) -> list[str]:
        """One line per reason: `left out: N item(s) planned`."""
        return [f"left out: {n} {reason}" for reason, n in sorted(self.left_out.items())]


def url_key(url: str, *, keep_www: bool = False) -> str:
    """How an http(s) address is looked up, as a web server sees a request: host lower-cased without port
    (and without `www.` unless keep_www), then the decoded path (`cdn.example.com/videos/a b.mp4`)."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    host = (parts.hostname or "").lower()
    host = host if keep_www else host.removeprefix("www.")
    return host + unquote(parts.path or "/")


def _source_forms(key: str, source: str, aliases: tuple[str, ...] = ()) -> tuple[str, str, str]:
    """(source, source page, source embed) of a migrated item: a platform key's documented URLs (a Mux
    item's player by its first playback id, public first: aliases), an http(s) source's own address, a
    file's or S3 object's path (no page)."""
    platform = platform_key(key)
    if platform is not None:
        embed = embed_url(*platform) or next(filter(None, map(alias_embed_url, aliases)), None)
        return key, page_url(*platform) or "", embed or ""
    if source_kind(source) is SourceKind.URL:
        url = safe_uri(source)
        return url, url, ""
    return source, "", ""


def build_links(client: VideoClient, book: LedgerReader) -> LinksMap:
    """The links map of a ledger: every done item and every video apply's copy, concat or cut made, with
    the new video's player links from one listing of the items' parents (100 a call) and a GET for a video
    not listed or listed without them. Only reads the service. Raises AuthError, VideoApiError (listing)."""
    result = LinksMap()
    wanted: list[tuple[str, str, str, str, str, str]] = []  # video id, source, page, embed, key, made by
    items = book.items()
    aliases = player_ids(book)
    for item in items:
        if item.state not in COMPLETE_STATES or not item.video_id:
            result.left_out[f"item(s) {item.state}"] += 1
            continue
        source, page, embed = _source_forms(item.key, item.spec.source, aliases.get(item.key, ()))
        wanted.append((item.video_id, source, page, embed, item.key, "migrate"))
    for unit in book.units():
        if unit.kind not in MAKES:
            continue
        if unit.state != UnitState.DONE or not unit.result_id or same_id(unit.result_id, unit.video_id):
            if unit.state != UnitState.DONE:
                result.left_out[f"apply {unit.kind} unit(s) {unit.state}"] += 1
            continue  # a cut written back to its own video made nothing new
        made = f"apply {unit.kind} (op {unit.op_id})"
        wanted.append((unit.result_id, f"video:{unit.video_id or unit.target}", "", "", unit.unit_key, made))
    titles = {item.key: item.spec.title for item in items}
    videos = _videos(client, [item.spec.parent_id for item in items], [w[0] for w in wanted], result)
    for video_id, source, page, embed, key, made in wanted:
        video = videos.get(_normal(video_id))
        if video is None:
            continue
        result.rows.append(
            LinkRow(
                source=source,
                source_page=page,
                source_embed=embed,
                video_id=video.id,
                play_link=video.play_link or "",
                embed_link=video.embed_link or "",
                title=video.title or titles.get(key, ""),
                key=key,
                made_by=made,
                aliases=aliases.get(key, ()) if made == "migrate" else (),
            )
        )
    return result


def player_ids(book: LedgerReader) -> dict[str, tuple[str, ...]]:
    """Each item's player ids as its create journalled them (the latest note: core.platform_keys)."""
    found: dict[str, tuple[str, ...]] = {}
    for event in book.events():
        if event.kind == "note" and event.key:
            ids = read_player_ids(event.message)
            if ids is not None:
                found[event.key] = ids
    return found


def _normal(video_id: str) -> str:
    return try_normal_id(video_id) or video_id


def _videos(
    client: VideoClient, parents: Iterable[str], video_ids: list[str], result: LinksMap
) -> dict[str, Video]:
    """The videos by normal id: listed in their parents, else (or without player links) one GET each; a
    video gone or unreadable is counted in result.left_out."""
    found: dict[str, Video] = {}
    if video_ids:
        listing = list_destination(client, sorted(set(parents)))
        found.update(listing.videos)
    for video_id in dict.fromkeys(video_ids):
        normal = _normal(video_id)
        video = found.get(normal)
        if video is not None and video.play_link and video.embed_link:
            continue
        try:
            video = client.videos.get(video_id)
        except NotFoundError:
            result.left_out["video(s) gone from the service (404)"] += 1
            found.pop(normal, None)
            continue
        except AuthError:
            raise
        except VideoApiError as exc:
            result.left_out[f"video(s) that could not be read ({exc.code})"] += 1
            found.pop(normal, None)
            continue
        if video.deleted_at is not None:
            result.left_out["video(s) deleted in the service"] += 1
            found.pop(normal, None)
            continue
        found[normal] = video
    return found
