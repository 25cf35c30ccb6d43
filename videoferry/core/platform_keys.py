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
