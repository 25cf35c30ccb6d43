"""Header-safe metadata for /v2/video: latin-1 values travel exactly, others become placeholders."""

from __future__ import annotations

import hashlib
import unicodedata

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
    """True when `value` arrives exactly as a header value (latin-1, no control chars, no edge spaces)."""
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    if value != value.strip(" \t"):
        return False  # HTTP strips leading/trailing whitespace from header values
    return not any(unicodedata.category(ch) == "Cc" for ch in value)


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
    """An informational file name that fits a latin-1 header: other characters become "_" (extension kept)."""
    out = []
    for ch in name:
        try:
            ch.encode("latin-1")
        except UnicodeEncodeError:
            out.append("_")
            continue
        out.append("_" if unicodedata.category(ch) == "Cc" else ch)
    return "".join(out).strip(" \t") or "upload"
