"""rewrite-embeds on one text: every embed or link of a migrated video replaced by its new player link
(the embed link in an iframe, embed or object tag and for a platform's player URL, the play link for a page
or a file's URL); a URL that cannot be mapped is left as it is and listed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from core.platform_keys import platform_key
from core.redact import scrub_urls
from tasks.links.platforms import PLAIN_URL_RE, find_platform_urls
from tasks.links.table import LinkRow, url_key

#: Tags whose URL is a player's: the new embed link goes there.
PLAYER_TAGS = frozenset({"iframe", "embed", "object", "param"})
#: Tags whose URL must be media bytes or a script: a player link cannot stand in, the URL is listed.
MEDIA_TAGS = frozenset({"video", "source", "audio", "track", "script", "link", "img"})
#: A plain URL that is a video file's (listed when no migrated source has it).
VIDEO_FILE_RE = re.compile(r"\.(?:mp4|m4v|mov|webm|mkv|avi|wmv|flv|mpe?g|m3u8|mpd|ts|ogv|3gp)$", re.I)
_TAG_RE = re.compile(r"<\s*([A-Za-z][A-Za-z0-9]*)")
_TRAILING = ".,;:!?"


@dataclass(frozen=True)
class Unmapped:
    """A URL left as it was: its 1-based line, its text (query cut: it may be signed) and why."""

    line: int
    url: str
    reason: str


@dataclass
class Rewritten:
    """One text rewritten: the new text, how many URLs were replaced, the ones left (Unmapped)."""

    text: str
    replaced: int
    unmapped: list[Unmapped]


class EmbedMap:
    """The links map as rewrite-embeds looks it up: by platform key (`vimeo:123`) and by address (url_key)."""

    def __init__(self, rows: Iterable[LinkRow]) -> None:
        self.by_key: dict[str, LinkRow] = {}
        self.by_address: dict[str, LinkRow] = {}
        for row in rows:
            platform = platform_key(row.source)
            if platform is not None:
                self.by_key.setdefault(f"{platform[0]}:{platform[1]}", row)
                for alias in row.aliases:  # a Mux item's playback ids: its player URLs name it by them
                    self.by_key.setdefault(alias, row)
            elif row.source_page:
                self.by_address.setdefault(url_key(row.source_page), row)

    def __len__(self) -> int:
        return len(self.by_key) + len(self.by_address)


def _tag_at(text: str, start: int) -> str | None:
    """The name of the HTML tag a position is inside (`iframe`), lower-cased; None outside any tag."""
    opened = text.rfind("<", 0, start)
    if opened < 0 or text.rfind(">", 0, start) > opened:
        return None
    match = _TAG_RE.match(text, opened)
    return match.group(1).lower() if match else None


def _shown(url: str) -> str:
    """A URL as a listing shows it: without its user part, query and fragment (a signature never shows)."""
    return scrub_urls(re.split(r"[?#]", url, maxsplit=1)[0])


def rewrite_text(text: str, links: EmbedMap) -> Rewritten:
    """Replace every mapped URL in text (Rewritten); the text is otherwise kept as it is, byte for byte."""
    spans: list[tuple[int, int, str | None, str]] = []  # start, end, new text (None: left), reason
    taken: list[tuple[int, int]] = []
    for found in find_platform_urls(text):
        row = links.by_key.get(found.key) or links.by_key.get(found.key.lower())
        taken.append((found.start, found.end))
        if found.still:
            why = f"an image of {found.key}: the map has no image of the new video; replace it by hand"
            spans.append((found.start, found.end, None, why))
            continue
        if row is None:
            spans.append((found.start, found.end, None, f"no migrated item {found.key}"))
            continue
        spans.append((found.start, found.end, *_choose(text, found.start, found.end, row, found.player)))
    for match in PLAIN_URL_RE.finditer(text):
        start, end = match.start(), match.end()
        while end > start and text[end - 1] in _TRAILING:
            end -= 1
        if any(s < end and start < e for s, e in taken):
            continue
        url = text[start:end]
        row = links.by_address.get(url_key(url)) if links.by_address else None
        if row is not None:
            spans.append((start, end, *_choose(text, start, end, row, False)))
        elif VIDEO_FILE_RE.search(re.split(r"[?#]", url, maxsplit=1)[0]):
            spans.append((start, end, None, "no migrated source has this address"))
    pieces: list[str] = []
    unmapped: list[Unmapped] = []
    replaced = 0
    cursor = 0
    for start, end, new, reason in sorted(spans):
        pieces.append(text[cursor:start])
        if new is None:
            pieces.append(text[start:end])
            unmapped.append(Unmapped(text.count("\n", 0, start) + 1, _shown(text[start:end]), reason))
        else:
            pieces.append(new)
            replaced += 1
        cursor = end
    pieces.append(text[cursor:])
    return Rewritten("".join(pieces), replaced, unmapped)


def _choose(text: str, start: int, end: int, row: LinkRow, player: bool) -> tuple[str | None, str]:
    """(the new link, "") for a mapped URL at start:end, or (None, why it is left)."""
    if re.match(r"\.\w", text[end : end + 2]):  # `.../medias/abc.jsonp`: a script, not a player URL
        return None, "followed by a file extension (a script or file form): replace it by hand"
    tag = _tag_at(text, start)
    if tag in MEDIA_TAGS:
        return None, f"in a <{tag}> tag, which needs media bytes, not a player page"
    name = "embed_link" if tag in PLAYER_TAGS or player else "play_link"
    link: str = getattr(row, name)
    if not link:
        return None, f"video {row.video_id} has no {name}"
    return link, ""
