"""Header-safe metadata for /v2/video: printable ASCII travels exactly, anything else as a placeholder."""

from __future__ import annotations

import hashlib

__all__ = [
    "PLACEHOLDER_PREFIX",
    "header_exact",
    "header_safe_title",
    "header_safe_filename",
    "placeholder_title",
]

#: Prefix of placeholder titles; a placeholder is found later with the list filter title=<placeholder>.
PLACEHOLDER_PREFIX = "videoferry-pending-"


def header_exact(value: str) -> bool:
    """True when `value` arrives exactly as a header value whatever charset the service decodes it with.

    Only printable ASCII qualifies: a service may read header bytes as latin-1 (like most HTTP servers) or as
    UTF-8 (the spec does not say), and ASCII is the same in both. No edge spaces (HTTP strips them).
    """
    if not value.isascii() or value != value.strip(" \t"):
        return False
    return all(" " <= ch <= "~" for ch in value)


def placeholder_title(key: str) -> str:
    """The deterministic placeholder title of an item key (ASCII, safe in a header and in a list filter)."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    return f"{PLACEHOLDER_PREFIX}{digest}"


def header_safe_title(title: str, key: str) -> tuple[str, bool]:
    """(value to send, pending): the title when it travels exactly, else a placeholder derived from `key`.

    When pending is True, set the real title with update_video (JSON, any Unicode) once the video exists;
    until then the video can be found by listing with title=<placeholder>.
    """
    if header_exact(title):
        return title, False
    return placeholder_title(key), True


def header_safe_filename(name: str) -> str:
    """An informational file name that fits any header charset: all but printable ASCII becomes "_"."""
    out = "".join(ch if " " <= ch <= "~" else "_" for ch in name)
    return out.strip(" \t") or "upload"
