"""Field rules shared by every input: tags, privacy domains, chapters and chapter times (one rule each)."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable
from typing import Any

_CLOCK_RE = re.compile(r"^(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")
_SECONDS_RE = re.compile(r"^\d+(?:\.\d+)?$")
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN_RE = re.compile(rf"^(?:\*\.)?{_LABEL}(?:\.{_LABEL})*$")


class FieldError(ValueError):
    """A cell that cannot be parsed; the message is the reason shown to the user."""


def near_name(name: str, known: Iterable[str]) -> str | None:
    """The known name that `name` most probably misspells (`titel` -> `title`), or None."""
    found = difflib.get_close_matches(name.strip().lower(), list(known), n=1, cutoff=0.75)
    return found[0] if found else None


def unknown_names(names: Iterable[str], known: Iterable[str]) -> str:
    """Unknown names for a message, each with the known name it most probably misspells:
    `'titel' (did you mean 'title'?), 'notes'`."""
    choices = list(known)
    parts = []
    for name in names:
        near = near_name(name, choices)
        parts.append(f"{name!r} (did you mean {near!r}?)" if near else repr(name))
    return ", ".join(parts)


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FieldError(f"invalid JSON ({exc.msg} at char {exc.pos})") from None


def parse_string_list(text: str) -> list[str]:
    """A JSON list of strings (text starting with '[') or a ';'-separated list; blanks dropped, order kept."""
    if text.lstrip().startswith("["):
        value = _load_json(text)
        if not isinstance(value, list):
            raise FieldError("expected a JSON list of strings")
        items: list[str] = []
        for i, item in enumerate(value, start=1):
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise FieldError(f"item {i} is not a string ({json.dumps(item)[:40]})")
            items.append(str(item).strip())
    else:
        items = [part.strip() for part in text.split(";")]
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def parse_tags(text: str) -> list[str]:
    """Tags: a JSON list or ';'-separated; duplicates removed."""
    return parse_string_list(text)


def parse_domains(text: str) -> list[str]:
    """Privacy domains: host names (optionally ``*.host``), lowercased; a JSON list or ';'-separated."""
    domains: list[str] = []
    for item in parse_string_list(text):
        domain = item.lower().rstrip(".")
        if not _DOMAIN_RE.match(domain):
            raise FieldError(f"{item[:80]!r} is not a host name (use example.com or *.example.com)")
        if domain not in domains:
            domains.append(domain)
    return domains


def parse_chapter_time(value: object) -> float:
    """Seconds as a user writes them: 90, 90.5, "90", "1:30", "01:02:03.5" -> float seconds."""
    if isinstance(value, bool):
        raise FieldError("time must be seconds, not true/false")
    if isinstance(value, int | float):
        seconds = float(value)
        if not math.isfinite(seconds) or seconds < 0:
            raise FieldError(f"time {value!r} must be a non-negative number of seconds")
        return seconds
    if not isinstance(value, str):
        raise FieldError(f"time must be a number or a string like '1:30', got {json.dumps(value)[:40]}")
    text = value.strip()
    if _SECONDS_RE.match(text):
        return float(text)
    match = _CLOCK_RE.match(text)
    if not match:
        raise FieldError(f"time {value[:40]!r} is not seconds, mm:ss or hh:mm:ss")
    hours_s, minutes_s, seconds_s = match.groups()
    minutes, seconds = int(minutes_s), float(seconds_s)
    if seconds >= 60 or (hours_s is not None and minutes >= 60):
        raise FieldError(f"time {value[:40]!r} has minutes or seconds of 60 or more")
    return (int(hours_s) if hours_s else 0) * 3600 + minutes * 60 + seconds


def parse_chapters(text: str) -> list[dict[str, Any]]:
    """A JSON list of {time, title} -> [{"time": float seconds, "title": str}], order kept."""
    value = _load_json(text)
    if not isinstance(value, list):
        raise FieldError("expected a JSON list of {time, title} objects")
    chapters: list[dict[str, Any]] = []
    for i, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise FieldError(f"chapter {i} is not an object with time and title")
        if "time" not in item or item["time"] is None:
            raise FieldError(f"chapter {i} has no time")
        try:
            seconds = parse_chapter_time(item["time"])
        except FieldError as exc:
            raise FieldError(f"chapter {i}: {exc}") from None
        title = item.get("title")
        if not isinstance(title, str) or not title.strip():
            raise FieldError(f"chapter {i} has no title")
        chapters.append({"time": seconds, "title": title.strip()})
    return chapters
