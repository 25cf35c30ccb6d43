"""The keys of items migrated from a video platform: `<platform>:<its id>` (`vimeo:123`, `wistia:abc`,
`mux:<asset id>`, `cloudflare:<uid>`, `apivideo:<videoId>`, `bunny:<library>/<guid>`)."""

from __future__ import annotations

#: The platforms whose items carry the key `<platform>:<id>` (the platform sources' keys).
PLATFORMS = ("vimeo", "wistia", "youtube", "mux", "cloudflare", "apivideo", "bunny")


def platform_key(key: str) -> tuple[str, str] | None:
    """(platform, id) of a key `<platform>:<id>` of a known platform; None for any other key."""
    platform, sep, ident = key.partition(":")
    if not sep or platform.lower() not in PLATFORMS or not ident.strip():
        return None
    return platform.lower(), ident.strip()


#: How the journal note that records an item's player ids begins (tasks/migrate/platform_source.py writes
#: it at the item's create; `links` and `rewrite-embeds` read the latest of each item).
PLAYER_IDS_NOTE = "player ids: "


def player_ids_note(keys: tuple[str, ...] | list[str]) -> str:
    """The journal note of an item's player ids: `player ids: mux:<id> mux:<id>`."""
    return PLAYER_IDS_NOTE + " ".join(keys)


def read_player_ids(message: str | None) -> tuple[str, ...] | None:
    """The player ids a journal note records (keys of known platforms, in order), None for another note."""
    if not message or not message.startswith(PLAYER_IDS_NOTE):
        return None
    found = [platform_key(word) for word in message[len(PLAYER_IDS_NOTE) :].split()]
    return tuple(f"{p}:{i}" for p, i in (f for f in found if f is not None))
