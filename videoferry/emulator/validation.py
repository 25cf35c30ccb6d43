"""Request body parsing and typed field extraction raising the spec's codes (1, 400101, 400102, 400400)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import ClientDisconnect, Request

from videoferry.emulator.errors import Invalid, bad_json, bad_utf8, io_error, type_error, validation
from videoferry.emulator.ids import parse_id


def parse_json_bytes(raw: bytes) -> dict[str, Any]:
    """Parse a JSON object body: code 1 when empty or truncated, 400101 on syntax, 400102 if no object."""
    if not raw.strip():
        raise io_error("EOF")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad_utf8(exc.start) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        end = len(text.rstrip())
        if exc.pos >= end or exc.msg.startswith("Unterminated string"):
            raise io_error("unexpected EOF") from None
        char = text[exc.pos]
        context = text[max(0, exc.pos - 10) : exc.pos + 10]
        raise bad_json(char, exc.pos, context) from None
    if not isinstance(value, dict):
        raise type_error("", value, "object")
    return value


async def read_json(request: Request) -> dict[str, Any]:
    """Read the whole body of a JSON request and parse it as an object."""
    try:
        raw = await request.body()
    except ClientDisconnect:
        raise io_error("unexpected EOF") from None
    return parse_json_bytes(raw)


class Fields:
    """Typed access to a JSON object: type errors raise at once (400102), validation failures collect."""

    def __init__(self, body: dict[str, Any], prefix: str = "") -> None:
        self.body = body
        self.prefix = prefix
        self.invalid: list[Invalid] = []

    def _name(self, name: str) -> str:
        return self.prefix + name

    def present(self, name: str) -> bool:
        """Whether the field was passed (null counts as not passed)."""
        return self.body.get(name) is not None

    def _get(self, name: str, required: bool, accepted: str) -> Any:
        value = self.body.get(name)
        if value is None and required:
            self.invalid.append(Invalid(self._name(name), "required", accepted))
        return value

    def string(self, name: str, *, required: bool = False, notempty: bool = False) -> str | None:
        """A string field."""
        value = self._get(name, required, "string")
        if value is None:
            return None
        if not isinstance(value, str):
            raise type_error(self._name(name), value, "string")
        if notempty and not value.strip():
            self.invalid.append(Invalid(self._name(name), "notempty", "non-empty string"))
        return value

    def integer(self, name: str, *, required: bool = False, minimum: int | None = None) -> int | None:
        """An integer field (a fractional number is a type error)."""
        value = self._get(name, required, "integer")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise type_error(self._name(name), value, "int")
        if minimum is not None and value < minimum:
            self.invalid.append(Invalid(self._name(name), "min", f"integer >= {minimum}"))
        return value

    def number(self, name: str, *, required: bool = False, minimum: float | None = None) -> float | None:
        """A number field."""
        value = self._get(name, required, "number")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise type_error(self._name(name), value, "float64")
        if minimum is not None and value < minimum:
            self.invalid.append(Invalid(self._name(name), "min", f"number >= {minimum}"))
        return float(value)

    def boolean(self, name: str, *, required: bool = False) -> bool | None:
        """A bool field."""
        value = self._get(name, required, "bool")
        if value is None:
            return None
        if not isinstance(value, bool):
            raise type_error(self._name(name), value, "bool")
        return value

    def strings(self, name: str, *, required: bool = False) -> list[str] | None:
        """An array of strings."""
        value = self._get(name, required, "array of strings")
        if value is None:
            return None
        if not isinstance(value, list):
            raise type_error(self._name(name), value, "[]string")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise type_error(f"{self._name(name)}[{i}]", item, "string")
        return list(value)

    def objects(self, name: str, *, required: bool = False) -> list[Fields] | None:
        """An array of objects, each wrapped in Fields sharing this collector."""
        value = self._get(name, required, "array of objects")
        if value is None:
            return None
        if not isinstance(value, list):
            raise type_error(self._name(name), value, "[]object")
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise type_error(f"{self._name(name)}[{i}]", item, "object")
            sub = Fields(item, f"{self._name(name)}[{i}].")
            sub.invalid = self.invalid
            out.append(sub)
        return out

    def obj(self, name: str, *, required: bool = False) -> Fields | None:
        """A nested object."""
        value = self._get(name, required, "object")
        if value is None:
            return None
        if not isinstance(value, dict):
            raise type_error(self._name(name), value, "object")
        sub = Fields(value, f"{self._name(name)}.")
        sub.invalid = self.invalid
        return sub

    def oneof(self, name: str, choices: tuple[str, ...], *, required: bool = False) -> str | None:
        """A string restricted to a set of values."""
        value = self.string(name, required=required)
        if value is not None and value not in choices:
            self.invalid.append(Invalid(self._name(name), "oneof", " ".join(choices)))
            return None
        return value

    def ident(self, name: str, *, required: bool = False) -> str | None:
        """An identifier string in any accepted notation (400301 / 400302 when unparseable)."""
        value = self.string(name, required=required)
        if value is None:
            return None
        return parse_id(value)

    def add(self, name: str, reason: str, message: str) -> None:
        """Record a validation failure found by the caller."""
        self.invalid.append(Invalid(self._name(name), reason, message))

    def check(self) -> None:
        """Raise 400400 with every collected failure."""
        if self.invalid:
            raise validation(*self.invalid)
