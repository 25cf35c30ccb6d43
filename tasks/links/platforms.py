"""The old platforms' documented URL forms: a platform key's source page and embed URLs, and the recognition
of every form in a text (which platform, which id, whether it is a player embed or a page)."""

from __future__ import annotations

import re
from dataclasses import dataclass


def page_url(platform: str, ident: str) -> str | None:
    """The platform's documented watch page of a video, where one exists without account details."""
    if platform == "vimeo":
        return f"https://vimeo.com/{ident}"
    if platform == "youtube":
        return f"https://www.youtube.com/watch?v={ident}"
    if platform == "apivideo":
        return f"https://embed.api.video/vod/{ident}"
    # Wistia's page is on the account's own host; Mux, Cloudflare and Bunny have none of their own
    return None


def embed_url(platform: str, ident: str) -> str | None:
    """The platform's documented player (iframe) URL of a video."""
    forms = {
        "vimeo": f"https://player.vimeo.com/video/{ident}",
        "wistia": f"https://fast.wistia.net/embed/iframe/{ident}",
        "youtube": f"https://www.youtube.com/embed/{ident}",
        "cloudflare": f"https://iframe.videodelivery.net/{ident}",
        "apivideo": f"https://embed.api.video/vod/{ident}",
    }
    # Mux's player takes a playback id, and a `mux:` key holds the asset id (the API's): none from the key
    if platform == "bunny":  # the player needs the library: a key `bunny:<library>/<video>`
        return f"https://iframe.mediadelivery.net/embed/{ident}" if "/" in ident else None
    return forms.get(platform)


def alias_embed_url(key: str) -> str | None:
    """The player URL of an item by one of its player ids (`mux:<playback id>`: `player.mux.com/<id>`)."""
    platform, _, ident = key.partition(":")
    return f"https://player.mux.com/{ident}" if platform == "mux" and ident else None


# -- recognition in a text --------------------------------------------------------------------------------

#: Before a URL: not part of a longer name (`notvimeo.com`) or path; the scheme and `//` optional.
_LEAD = r"(?<![\w.\-/@])(?:https?:)?(?://)?"
#: After a URL's id: an optional trailing slash, query (`?h=...`, `&t=..`, `&amp;t=..`) and fragment.
_TAIL = r"/?(?:[?&][^\s\"'<>()\[\]]*)?(?:#[^\s\"'<>()\[\]]*)?"
#: Punctuation that ends a sentence, not a URL.
_TRAILING = ".,;:!?"
_ID = r"[A-Za-z0-9_\-]+"


@dataclass(frozen=True)
class Form:
    """One URL form: its platform, whether it is a player (iframe) URL, the pattern (group `id`); still:
    an image of the video (a thumbnail, a storyboard), listed and never rewritten (the map has no image)."""

    platform: str
    player: bool
    pattern: str
    still: bool = False


FORMS = (
    Form("vimeo", True, r"player\.vimeo\.com/video/(?P<id>\d+)(?:/[0-9a-f]{6,})?"),
    Form("vimeo", False, rf"(?:www\.)?vimeo\.com/(?:channels/{_ID}/)?(?P<id>\d+)(?:/[0-9a-f]{{6,}})?"),
    Form("wistia", True, rf"fast\.wistia\.(?:net|com)/embed/(?:iframe|medias)/(?P<id>{_ID})"),
    Form("wistia", False, rf"[\w\-]+\.wistia\.com/medias/(?P<id>{_ID})"),
    Form("youtube", True, r"(?:www\.|m\.)?youtube(?:-nocookie)?\.com/embed/(?P<id>[\w\-]{11})"),
    Form("youtube", False, r"youtu\.be/(?P<id>[\w\-]{11})"),
    Form(
        "youtube",
        False,
        r"(?:www\.|m\.)?youtube\.com/watch\?(?:[^\s\"'<>#()]*?&(?:amp;)?)?v=(?P<id>[\w\-]{11})",
    ),
    Form("mux", True, rf"player\.mux\.com/(?P<id>{_ID})"),
    # Mux's stream by playback id: its HLS playlist, or a static MP4 (`/<id>/high.mp4`), taken whole
    Form("mux", False, rf"stream\.mux\.com/(?P<id>{_ID})(?:\.m3u8|/[\w\-]+\.(?:mp4|m4a))?"),
    Form("mux", False, rf"image\.mux\.com/(?P<id>{_ID})(?:/[\w\-]+\.(?:jpg|jpeg|png|webp|gif|vtt))?", True),
    Form("cloudflare", True, rf"(?:iframe|watch)\.videodelivery\.net/(?P<id>{_ID})"),
    Form("cloudflare", True, rf"customer-{_ID}\.cloudflarestream\.com/(?P<id>{_ID})/(?:iframe|watch)"),
    Form(
        "cloudflare",
        False,
        rf"(?:customer-{_ID}\.cloudflarestream\.com|videodelivery\.net)/(?P<id>{_ID})"
        r"/(?:manifest/video\.(?:m3u8|mpd)|downloads/default\.mp4)",
    ),
    Form(
        "cloudflare",
        False,
        rf"(?:customer-{_ID}\.cloudflarestream\.com|videodelivery\.net)/(?P<id>{_ID})"
        r"/thumbnails/[\w\-]+\.(?:jpg|jpeg|png|gif|webp)",
        True,
    ),
    Form("apivideo", True, rf"embed\.api\.video/vod/(?P<id>{_ID})"),
    Form("bunny", True, rf"(?:iframe|player)\.mediadelivery\.net/(?:embed|play)/(?P<id>\d+/{_ID})"),
)


def _numbered() -> re.Pattern[str]:
    parts = []
    for n, form in enumerate(FORMS):
        pattern = form.pattern.replace("(?P<id>", f"(?P<id{n}>")
        parts.append(f"(?P<f{n}>{_LEAD}{pattern}{_TAIL})")
    return re.compile("|".join(parts), re.IGNORECASE)


#: Every form, each its own group (f0, f1, ... with id0, id1, ...), in the order of FORMS.
FOUND_RE = _numbered()
#: A plain http(s) URL (a migrated file's), up to a space, quote, bracket or angle bracket.
PLAIN_URL_RE = re.compile(r"(?<![\w.\-/@])https?://[^\s\"'<>()\[\]]+", re.IGNORECASE)


@dataclass(frozen=True)
class Found:
    """One platform URL found in a text: where, its text, platform, id and form (player or page)."""

    start: int
    end: int
    text: str
    platform: str
    ident: str
    player: bool
    still: bool = False

    @property
    def key(self) -> str:
        """The key of the item it was migrated as: `<platform>:<id>`."""
        return f"{self.platform}:{self.ident}"


#: The hosts of every form: only the stretch of text around one of them is matched against the forms
#: (trying every form at every position of a long page is a hundred times slower).
_HOSTS_RE = re.compile(
    r"vimeo\.com|wistia\.(?:net|com)|youtube(?:-nocookie)?\.com|youtu\.be|mux\.com|videodelivery\.net"
    r"|cloudflarestream\.com|api\.video|mediadelivery\.net",
    re.IGNORECASE,
)
#: What ends a URL's stretch of text (no form's characters).
_STOPS = frozenset(" \t\r\n\f\v\"'<>()[]")


def find_platform_urls(text: str) -> list[Found]:
    """Every platform URL in text, in order (none overlapping)."""
    found: list[Found] = []
    cursor = 0
    for hit in _HOSTS_RE.finditer(text):
        if hit.start() < cursor:
            continue
        start, end = hit.start(), hit.end()
        while start > cursor and text[start - 1] not in _STOPS and not text[start - 1].isspace():
            start -= 1
        while end < len(text) and text[end] not in _STOPS and not text[end].isspace():
            end += 1
        found += _forms_in(text, start, end)
        cursor = end
    return found


def _forms_in(text: str, start: int, stop: int) -> list[Found]:
    """The forms in text[start:stop], a stretch without spaces, quotes or brackets."""
    found: list[Found] = []
    for match in FOUND_RE.finditer(text, start, stop):
        number = int(str(match.lastgroup)[1:])
        form = FORMS[number]
        end = match.end()
        while end > match.end(f"id{number}") and text[end - 1] in _TRAILING:
            end -= 1  # `see vimeo.com/1?h=2.`: the full stop is the sentence's
        ident = match[f"id{number}"]
        found.append(
            Found(
                match.start(), end, text[match.start() : end], form.platform, ident, form.player, form.still
            )
        )
    return found
