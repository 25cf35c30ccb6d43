"""The rules of a setup desired-state file's events: each field checked (spec 4.5-4.7, 8)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

from connectors.desired_state_models import (
    BatchSpec,
    EventSpec,
    Resolver,
    RestreamSpec,
    parse_secret_ref,
)

__all__ = ["Reader", "read_event", "as_bool", "strings", "EVENT_KEYS"]

EVENT_TYPES = ("one-time", "recurring")
#: An event's states (spec 3.2): created in draft, PUT .../enable, PUT .../complete.
EVENT_STATES = ("draft", "enabled", "completed")
PRESETS = ("360p", "480p", "720p", "1080p", "1440p", "2160p")
LATENCY_MODES = ("standard", "reduced")
PRIVACY_TYPES = ("anywhere", "nowhere", "custom")
BOOL_FIELDS = (
    "auto_start",
    "protected",
    "time_shift",
    "show_members",
    "chat_active",
    "chat_after_stream",
    "chat_preview",
    "unique_codes_enabled",
)
LIST_FIELDS = ("presets", "privacy_domains", "privacy_email_domains")
TEXT_FIELDS = ("subtitle", "record_parent_id", "latency_mode", "privacy_type")
#: The keys an event may have (the create fields of spec 4.5 in the client's names, and its sub-objects).
EVENT_KEYS = frozenset(
    {"name", "type", "parent_id", "reconnect_window", "scheduled_time", "privacy_share", "restreams"}
    | {"stream_start", "next_stream", "state", "poster", "unique_codes"}
    | set(BOOL_FIELDS)
    | set(LIST_FIELDS)
    | set(TEXT_FIELDS)
)
_LINK_HASH = re.compile(r"^[A-Za-z0-9]{6}$")
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off", ""}


class Reader:
    """Collects values with the line of each path, and the problems found."""

    def __init__(self, path: str, resolver: Resolver, today: date) -> None:
        self.path = path
        self.resolver = resolver
        self.today = today
        self.problems: list[str] = []
        self.secrets: list[str] = []

    def fail(self, where: str, name: str, reason: str) -> None:
        self.problems.append(f"{where}: {name}: {reason}")

    def secret(self, value: Any, where: str, name: str) -> str | None:
        ref = parse_secret_ref(value)
        if ref is None:
            self.fail(where, name, "must be a reference (${ENV_NAME} or secret-block:NAME), never a literal")
            return None
        try:
            resolved = self.resolver(ref)
        except KeyError:
            self.fail(where, name, f"{ref} is not set")
            return None
        self.secrets.append(resolved)
        return resolved


def as_bool(value: Any) -> bool | None:
    """A boolean written as one (true/yes/1/on, false/no/0/off); None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _day(value: Any) -> date | None:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


def strings(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [part.strip() for part in value.split(";") if part.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    return None


def _batches(r: Reader, raw: Any, where: Callable[[str], str], prefix: str) -> tuple[BatchSpec, ...]:
    if not isinstance(raw, list):
        r.fail(where(prefix), prefix, "must be a list of batches")
        return ()
    out: list[BatchSpec] = []
    seen: set[str] = set()
    total = 0
    for i, item in enumerate(raw):
        at, name = where(f"{prefix}[{i}]"), f"{prefix}[{i}]"
        if not isinstance(item, dict):
            r.fail(at, name, "must be a mapping")
            continue
        unknown = set(item) - {
            "name",
            "codes_amount",
            "max_count",
            "sessions_per_code",
            "starts_at",
            "expires_at",
        }
        for key in sorted(unknown):
            r.fail(at, f"{name}.{key}", "unknown field")
        batch_name = item.get("name")
        if not isinstance(batch_name, str) or not batch_name.strip():
            r.fail(at, f"{name}.name", "required")
            continue
        if len(batch_name) > 255:
            r.fail(where(f"{prefix}[{i}].name"), f"{name}.name", "at most 255 characters")
        if batch_name in seen:
            r.fail(where(f"{prefix}[{i}].name"), f"{name}.name", f"{batch_name!r} twice in the event")
        seen.add(batch_name)
        values: dict[str, int | None] = {}
        for key, low, high, required in (
            ("codes_amount", 1, 9999, True),
            ("max_count", 1, 9999, False),
            ("sessions_per_code", 1, 100, False),
        ):
            raw_value = item.get(key)
            number = _int(raw_value)
            if raw_value is None and not required:
                values[key] = None
            elif number is None or not low <= number <= high:
                r.fail(where(f"{prefix}[{i}].{key}"), f"{name}.{key}", f"an integer from {low} to {high}")
                values[key] = None
            else:
                values[key] = number
        total += values["codes_amount"] or 0
        days: dict[str, date | None] = {}
        past: str | None = None
        for key in ("starts_at", "expires_at"):
            raw_day = item.get(key)
            days[key] = _day(raw_day) if raw_day is not None else None
            if raw_day is not None and days[key] is None:
                r.fail(where(f"{prefix}[{i}].{key}"), f"{name}.{key}", "a date YYYY-MM-DD")
            elif days[key] is not None and days[key] < r.today:  # type: ignore[operator]
                past = past or f"{where(f'{prefix}[{i}].{key}')}: {name}.{key}: in the past"
        starts, expires = days["starts_at"], days["expires_at"]
        if expires is not None and expires < (starts or r.today):
            r.fail(where(f"{prefix}[{i}].expires_at"), f"{name}.expires_at", "earlier than starts_at")
        if values["codes_amount"] is not None:
            out.append(
                BatchSpec(
                    batch_name,
                    values["codes_amount"],
                    values["max_count"],
                    values["sessions_per_code"],
                    starts,
                    expires,
                    at,
                    past,
                )
            )
    if total > 9999:
        r.fail(where(prefix), prefix, f"{total} codes in the event: at most 9999 active codes per event")
    return tuple(out)


def _restreams(r: Reader, raw: Any, where: Callable[[str], str]) -> tuple[RestreamSpec, ...]:
    if not isinstance(raw, list):
        r.fail(where("restreams"), "restreams", "must be a list of targets")
        return ()
    out: list[RestreamSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        at, name = where(f"restreams[{i}]"), f"restreams[{i}]"
        if not isinstance(item, dict):
            r.fail(at, name, "must be a mapping")
            continue
        for key in sorted(set(item) - {"name", "url", "key", "description", "enabled"}):
            r.fail(at, f"{name}.{key}", "unknown field")
        target, url = item.get("name"), item.get("url")
        if not isinstance(target, str) or not target.strip():
            r.fail(at, f"{name}.name", "required")
            continue
        if target in seen:
            r.fail(at, f"{name}.name", f"{target!r} twice in the event")
        seen.add(target)
        if not isinstance(url, str) or not url.strip():
            r.fail(at, f"{name}.url", "required")
            continue
        key = r.secret(item.get("key"), where(f"restreams[{i}].key"), f"{name}.key")
        enabled = item.get("enabled")
        if enabled is not None and as_bool(enabled) is None:
            r.fail(at, f"{name}.enabled", "true or false")
        description = item.get("description")
        if key is not None:
            out.append(
                RestreamSpec(
                    target,
                    url.strip(),
                    key,
                    str(description) if description is not None else None,
                    as_bool(enabled),
                    at,
                )
            )
    return tuple(out)


def read_event(r: Reader, raw: Any, where: Callable[[str], str], default_parent: Any) -> EventSpec | None:
    if not isinstance(raw, dict):
        r.fail(where(""), "event", "must be a mapping")
        return None
    count = len(r.problems)
    for key in sorted(set(raw) - EVENT_KEYS):
        r.fail(where(key), key, "unknown field")
    name, type_ = raw.get("name"), raw.get("type")
    parent = raw.get("parent_id", default_parent)
    if not isinstance(name, str) or not name.strip():
        r.fail(where("name"), "name", "required")
    if type_ not in EVENT_TYPES:
        r.fail(where("type"), "type", f"required: one of {', '.join(EVENT_TYPES)}")
    if not isinstance(parent, str) or not parent.strip():
        r.fail(where("parent_id"), "parent_id", "required (here or at the top of the file)")
    fields: dict[str, Any] = {}
    for key in BOOL_FIELDS:
        if key in raw:
            fields[key] = as_bool(raw[key])
            if fields[key] is None:
                r.fail(where(key), key, "true or false")
    for key in LIST_FIELDS:
        if key in raw:
            fields[key] = strings(raw[key])
            if fields[key] is None:
                r.fail(where(key), key, "a list of strings")
    for key in TEXT_FIELDS:
        if key in raw and raw[key] is not None and str(raw[key]) != "":
            fields[key] = str(raw[key])
    if "reconnect_window" in raw:
        fields["reconnect_window"] = _int(raw["reconnect_window"])
        if fields["reconnect_window"] is None:
            r.fail(where("reconnect_window"), "reconnect_window", "an integer (seconds)")
    if raw.get("scheduled_time") not in (None, ""):
        fields["scheduled_time"] = _moment(raw["scheduled_time"])
        if fields["scheduled_time"] is None:
            r.fail(where("scheduled_time"), "scheduled_time", "an RFC 3339 time")
    for key, allowed in (("latency_mode", LATENCY_MODES), ("privacy_type", PRIVACY_TYPES)):
        if key in fields and fields[key] not in allowed:
            r.fail(where(key), key, f"one of {', '.join(allowed)}")
    for preset in fields.get("presets") or []:
        if preset not in PRESETS:
            r.fail(where("presets"), "presets", f"{preset!r} is not one of {', '.join(PRESETS)}")
    if fields.get("privacy_type") == "custom" and not fields.get("privacy_domains"):
        at = where("privacy_domains" if "privacy_domains" in raw else "privacy_type")
        r.fail(at, "privacy_domains", "required when privacy_type is custom")
    share = raw.get("privacy_share")
    if share is not None:
        fields["privacy_share"] = _share(r, share, where)
        if fields.get("unique_codes_enabled"):
            r.fail(where("privacy_share"), "privacy_share", "reset by unique_codes_enabled: true (spec 3.2)")
    if fields.get("unique_codes_enabled") is False and raw.get("unique_codes"):
        r.fail(
            where("unique_codes_enabled"),
            "unique_codes_enabled",
            "false, but the first batch turns it on (3.2)",
        )
    restreams = _restreams(r, raw["restreams"], where) if "restreams" in raw else None
    batches = _batches(r, raw["unique_codes"], where, "unique_codes") if "unique_codes" in raw else None
    stream_start = None
    if raw.get("stream_start") not in (None, ""):
        stream_start = _moment(raw["stream_start"])
        if stream_start is None:
            r.fail(where("stream_start"), "stream_start", "an RFC 3339 time")
    state, next_stream = _lifecycle(r, raw, where)
    poster = raw.get("poster")
    if poster not in (None, "") and not (
        isinstance(poster, str) and poster.startswith(("http://", "https://"))
    ):
        r.fail(where("poster"), "poster", "an http(s) address of an image")
    if len(r.problems) > count:
        return None
    lines = {key: where(key) for key in raw}
    return EventSpec(
        str(name).strip(),
        str(type_),
        str(parent).strip(),
        fields,
        restreams,
        batches,
        stream_start,
        poster or None,
        where(""),
        lines,
        state,
        next_stream,
    )


def _lifecycle(
    r: Reader, raw: dict[str, Any], where: Callable[[str], str]
) -> tuple[str | None, datetime | None]:
    """An event's state (draft, enabled, completed) and a recurring event's next stream."""
    state = raw.get("state")
    if state in (None, ""):
        state = None
    elif str(state) not in EVENT_STATES:
        r.fail(where("state"), "state", f"one of {', '.join(EVENT_STATES)}")
    next_stream = None
    if raw.get("next_stream") not in (None, ""):
        next_stream = _moment(raw["next_stream"])
        if next_stream is None:
            r.fail(where("next_stream"), "next_stream", "an RFC 3339 time")
        elif raw.get("type") != "recurring":
            r.fail(
                where("next_stream"),
                "next_stream",
                "only a recurring event has more streams (a one-time event's stream_start moves its one)",
            )
    return (None if state is None else str(state)), next_stream


def _share(r: Reader, raw: Any, where: Callable[[str], str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        r.fail(where("privacy_share"), "privacy_share", "must be a mapping")
        return {}
    out: dict[str, Any] = {}
    for key in sorted(set(raw) - {"password", "link_hash", "sso"}):
        r.fail(where(f"privacy_share.{key}"), f"privacy_share.{key}", "unknown field")
    if "password" in raw and "link_hash" in raw:
        r.fail(where("privacy_share.password"), "privacy_share.password", "cannot be combined with link_hash")
    if "password" in raw:
        password = r.secret(raw["password"], where("privacy_share.password"), "privacy_share.password")
        if password is not None and len(password) < 2:
            r.fail(where("privacy_share.password"), "privacy_share.password", "at least 2 characters")
        out["password"] = password
    if "link_hash" in raw:
        link_hash = str(raw["link_hash"])
        if not _LINK_HASH.match(link_hash):
            r.fail(where("privacy_share.link_hash"), "privacy_share.link_hash", "exactly 6 letters or digits")
        out["link_hash"] = link_hash
    if "sso" in raw:
        out["sso"] = as_bool(raw["sso"])
    return out
