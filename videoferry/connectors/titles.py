"""Header-safe metadata for /v2/video: printable ASCII travels exactly, anything else as a placeholder."""

from __future__ import annotations

import hashlib

from videoferry.core.tidy import MIN_TITLE_CAP, survives_tidying

__all__ = [
    "PLACEHOLDER_PREFIX",
    "header_exact",
    "header_safe_title",
    "header_safe_filename",
    "is_placeholder",
    "placeholder_title",
    "placeholder_titles",
]

#: Prefix of placeholder titles (markers): a placeholder is found later by listing, whatever the service's
#: tidying (printable ASCII without whitespace, MIN_TITLE_CAP characters: core.tidy.survives_tidying).
PLACEHOLDER_PREFIX = "videoferry-"
#: Hex digits of sha256(key) after the prefix: the marker fills MIN_TITLE_CAP characters (84 bits).
_DIGITS = MIN_TITLE_CAP - len(PLACEHOLDER_PREFIX)
#: The placeholder of ledgers written before markers fit MIN_TITLE_CAP: "videoferry-pending-" and 24 hex
#: digits (43 characters). A ledger's recorded create title is looked up as recorded (tasks/lookup.py: a cap
#: cutting it is a cut title, still recognised); check --adopt also tries it.
_LEGACY_PREFIX = "videoferry-pending-"
_LEGACY_DIGITS = 24
_HEX = frozenset("0123456789abcdef")


def header_exact(value: str) -> bool:
    """True when `value` arrives exactly as a header value whatever charset the service decodes it with.

    Only printable ASCII qualifies: a service may read header bytes as latin-1 (like most HTTP servers) or as
    UTF-8 (the spec does not say), and ASCII is the same in both. No edge spaces (HTTP strips them).
    """
    if not value.isascii() or value != value.strip(" \t"):
        return False
    return all(" " <= ch <= "~" for ch in value)


def placeholder_title(key: str) -> str:
    """The deterministic placeholder title (marker) of an item key: printable ASCII without whitespace,
    MIN_TITLE_CAP characters, so no tidying a service may do changes it (safe in a header and a list filter).
    """
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    marker = f"{PLACEHOLDER_PREFIX}{digest[:_DIGITS]}"
    assert survives_tidying(marker)
    return marker


def placeholder_titles(key: str) -> tuple[str, str]:
    """Every placeholder a create of this key may have been sent under: today's marker, then the one of
    older ledgers (43 characters: a service with a cap below that keeps a cut of it)."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return placeholder_title(key), f"{_LEGACY_PREFIX}{digest[:_LEGACY_DIGITS]}"


def is_placeholder(title: str | None) -> bool:
    """Whether a title is one of our placeholders (today's marker or an older ledger's, whole or cut to at
    least MIN_TITLE_CAP characters by a service's cap)."""
    if not title or not title.startswith(PLACEHOLDER_PREFIX):
        return False
    if title.startswith(_LEGACY_PREFIX):
        digits = title[len(_LEGACY_PREFIX) :]
        return len(title) >= MIN_TITLE_CAP and len(digits) <= _LEGACY_DIGITS and set(digits) <= _HEX
    digits = title[len(PLACEHOLDER_PREFIX) :]
    return len(digits) == _DIGITS and set(digits) <= _HEX


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
