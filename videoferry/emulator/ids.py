"""Identifiers: new UUIDs and parsing of the three accepted notations (dashed, hex, base58)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from videoferry.emulator.errors import ApiError, bad_base58, bad_uuid

BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(BASE58_ALPHABET)}
_HEX = frozenset("0123456789abcdefABCDEF")
_UUID_DOC = "https://datatracker.ietf.org/doc/html/rfc4122#section-3"
#: The ids parsed while handling the current request (path, body, headers, query), when someone watches.
_SEEN: ContextVar[list[str] | None] = ContextVar("emulator_seen_ids", default=None)


@contextmanager
def watching_ids() -> Iterator[list[str]]:
    """Collect every id parse_id parses in this context (one request's handler) into the yielded list."""
    seen: list[str] = []
    token = _SEEN.set(seen)
    try:
        yield seen
    finally:
        _SEEN.reset(token)


def new_id() -> str:
    """A fresh identifier in canonical (dashed, lowercase) notation."""
    return str(uuid.uuid4())


def to_base58(value: str) -> str:
    """Encode a canonical UUID as base58, left-padded with '0' to 22 characters."""
    n = uuid.UUID(value).int
    out = []
    while n:
        n, rem = divmod(n, 58)
        out.append(BASE58_ALPHABET[rem])
    return "".join(reversed(out)).rjust(22, "0")


def to_hex(value: str) -> str:
    """The UUID without dashes."""
    return uuid.UUID(value).hex


def _bad_format(value: str) -> ApiError:
    return bad_uuid(_UUID_DOC)


def parse_id(value: str) -> str:
    """Canonical dashed UUID for any accepted notation; 400301 / 400302 when it cannot be parsed."""
    canonical = _parse(value)
    seen = _SEEN.get()
    if seen is not None:
        seen.append(canonical)
    return canonical


def _parse(value: str) -> str:
    n = len(value)
    if n == 36 and value.count("-") == 4:
        if [len(p) for p in value.split("-")] == [8, 4, 4, 4, 12] and all(
            c in _HEX for c in value.replace("-", "")
        ):
            return str(uuid.UUID(value))
        raise _bad_format(value)
    if n == 32 and all(c in _HEX for c in value):
        return str(uuid.UUID(hex=value))
    if n in (21, 22):
        digits = value.lstrip("0")
        if any(c not in _B58_INDEX for c in digits):
            raise bad_base58()
        number = 0
        for c in digits:
            number = number * 58 + _B58_INDEX[c]
        if number >= 1 << 128:
            raise _bad_format(value)
        return str(uuid.UUID(int=number))
    raise _bad_format(value)
