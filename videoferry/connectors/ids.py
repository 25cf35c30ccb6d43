"""Identifiers in one normal form: the service accepts (and may answer) dashed, undashed or base58 UUIDs."""

from __future__ import annotations

import re
import uuid

#: The base58 alphabet (Bitcoin's): no 0, O, I or l. A leading "0" pads a 21-character value to 22.
BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(BASE58_ALPHABET)}
#: The dashed (8-4-4-4-12) and undashed (32) hex notations, either case, matched by a regular expression: a
#: listing page holds about 1,100 ids, and checking them character by character was 60 % of parsing it.
_DASHED = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_UNDASHED = re.compile(r"[0-9a-fA-F]{32}")


def normal_id(value: str) -> str:
    """The dashed lowercase UUID of an identifier in any notation of spec convention 5.

    Raises ValueError naming the value's shape (never the value: ids are not secrets, but messages stay
    short) when it is none of the three notations.
    """
    text = value.strip()
    n = len(text)
    if n == 36 and _DASHED.fullmatch(text):
        return text.lower()
    elif n == 32 and _UNDASHED.fullmatch(text):
        hexa = text.lower()
        return f"{hexa[:8]}-{hexa[8:12]}-{hexa[12:16]}-{hexa[16:20]}-{hexa[20:]}"
    elif n in (21, 22):
        digits = text.lstrip("0")
        if digits and all(c in _B58_INDEX for c in digits):
            number = 0
            for c in digits:
                number = number * 58 + _B58_INDEX[c]
            if number < 1 << 128:
                return str(uuid.UUID(int=number))
    raise ValueError(
        f"not an identifier ({n} characters): expected a UUID with or without dashes, or base58 of 21-22"
    )


def try_normal_id(value: str | None) -> str | None:
    """normal_id when the value is an identifier; the value unchanged otherwise (None stays None)."""
    if value is None:
        return None
    try:
        return normal_id(value)
    except ValueError:
        return value


def same_id(a: str | None, b: str | None) -> bool:
    """Whether two identifiers name the same object, whatever their notations."""
    if not a or not b:
        return False
    return try_normal_id(a) == try_normal_id(b)


def to_base58(value: str) -> str:
    """An identifier in base58 notation, 22 characters (for tests and for services that want it)."""
    n = uuid.UUID(normal_id(value)).int
    out: list[str] = []
    while n:
        n, rem = divmod(n, 58)
        out.append(BASE58_ALPHABET[rem])
    return "".join(reversed(out)).rjust(22, "0")
