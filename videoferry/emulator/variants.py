"""Variants: the service's other plausible choices where the spec says "not shown", per workspace."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from videoferry.emulator.errors import (
    EMAIL_NOT_CONFIRMED,
    NO_BILLING_ACCOUNT,
    NO_PAYMENT_METHOD,
    NOT_ENOUGH_MONEY,
    SUBSCRIPTION_NOT_PAID,
)
from videoferry.emulator.ids import to_base58, to_hex

#: name -> what the service does differently (emulator/README.md has the table with the defaults).
VARIANTS: dict[str, str] = {
    "ignore-title-filter": "the videos list ignores the title query parameter",
    "ignore-parent-filter": "the videos list ignores project_id and folder_id",
    "page-cap-25": "lists answer at most 25 items a page whatever per_page asks",
    "page-cap-10": "lists answer at most 10 items a page whatever per_page asks",
    "no-total": "meta.pagination has page and per_page but no total",
    "list-lag": "a new video appears in lists only list_lag_seconds after its create (GET sees it at once)",
    "update-put": "update takes PUT; PATCH answers 405",
    "move-put": "move takes PUT; POST answers 405",
    "copy-put": "copy takes PUT; POST answers 405",
    "cut-put": "cut takes PUT; POST answers 405",
    "concat-put": "concat takes PUT; POST answers 405",
    "chapters-post": "chapters takes POST; PUT answers 405",
    "video-put": "/v2/video takes PUT; POST answers 405",
    "empty-bodies": "copy, move, cut and concat answer 200 with an empty body",
    "id-only-bodies": "copy, move, cut and concat answer {data: {id}} only",
    "cut-new-video": "cut makes a new video with the result; the source is unchanged",
    "clock-ahead": "the service's clock (timestamps and Date header) runs clock_offset_seconds ahead",
    "clock-behind": "the service's clock (timestamps and Date header) runs clock_offset_seconds behind",
    "whole-seconds": "timestamps carry whole seconds only",
    "ids-undashed": "identifiers in answers are UUIDs without dashes",
    "ids-upper": "identifiers in answers are upper-case dashed UUIDs",
    "ids-base58": "identifiers in answers are base58 (22 characters)",
    "no-original": "no original asset is kept (spec convention 7)",
    "headers-utf8": "upload headers are decoded as UTF-8 (invalid bytes become U+FFFD), not latin-1",
    "init-session-id": "the init answer's id is an upload session's, not the video's",
    "init-replace-field": "init of type replace takes its video as replace_video_id; video_id is ignored",
    "replace-needs-bytes": "init of type replace is refused (400 not ready) for a video whose upload never "
    "completed",
    "endpoint-expiry": "upload addresses stop working endpoint_ttl_seconds after their init (404)",
    "tus-rate-limited": "requests to upload addresses count against the token's rate limit",
    "patch-body-cap": "a PATCH to an upload address whose body is above patch_body_cap bytes is answered "
    "413, nothing kept (a body limit in front of the upload host)",
    "webhook-alt-shape": "media.update.status arrives as {type, object: {media_id, status, reason}, sent_at}",
    "tidy-text": "title, description and a material's file name are stored with whitespace runs collapsed to "
    "one space, trimmed, NFC",
    "title-cap": "titles are stored cut to title_cap characters",
    "tags-tidy": "tags are stored lower-cased, without duplicates (the first one kept)",
    "chapter-titles-trimmed": "chapter titles are stored trimmed",
    "poll-rule-429": "a GET of a video sooner than the poll rule after the last answered one is 429",
    "delete-post": "delete takes POST on the video's path; DELETE answers 405",
    "codes-reset-share": "the first unique codes batch of an event also resets its privacy_share",
    "materials-downloadable": "each additional material has a signed download_link serving its bytes",
    "video-quota": "the workspace holds at most video_quota videos: a create beyond is refused with 100106 "
    "LIMIT_REACHED (HTTP quota_status)",
    "balance-empty": "after refuse_after more creates, every create is refused with 400207 NOT_ENOUGH_MONEY",
    "no-billing-account": "after refuse_after more creates, every create is refused with 400208",
    "no-payment-method": "after refuse_after more creates, every create is refused with 400209",
    "subscription-unpaid": "after refuse_after more creates, every create is refused with 400212",
    "email-unconfirmed": "after refuse_after more creates, every create is refused with 400213",
    "refuse-changes": "with balance-empty, no-billing-account, no-payment-method, subscription-unpaid or "
    "email-unconfirmed, updates, moves and deletes of videos are refused too (counted with the creates)",
    "processing-queue": "at most processing_concurrency videos are processed at once (each for the timed "
    "mode's seconds, queue_seconds in immediate mode); the others wait their turn in order (status "
    "processing)",
}
#: The variants of a workspace whose own state refuses creates (emulator/refusals.py) -> the code it answers.
REFUSING: dict[str, int] = {
    "balance-empty": NOT_ENOUGH_MONEY,
    "no-billing-account": NO_BILLING_ACCOUNT,
    "no-payment-method": NO_PAYMENT_METHOD,
    "subscription-unpaid": SUBSCRIPTION_NOT_PAID,
    "email-unconfirmed": EMAIL_NOT_CONFIRMED,
}
#: Variants that contradict each other: at most one of each group.
EXCLUSIVE: tuple[tuple[str, ...], ...] = (
    ("clock-ahead", "clock-behind"),
    ("ids-undashed", "ids-upper", "ids-base58"),
    ("page-cap-25", "page-cap-10"),
    ("empty-bodies", "id-only-bodies"),
    tuple(REFUSING),
)
#: variant -> (operation, our default method, the other plausible one).
METHOD_SWAPS: dict[str, tuple[str, str, str]] = {
    "update-put": ("update", "PATCH", "PUT"),
    "move-put": ("move", "POST", "PUT"),
    "copy-put": ("copy", "POST", "PUT"),
    "cut-put": ("cut", "POST", "PUT"),
    "concat-put": ("concat", "POST", "PUT"),
    "chapters-post": ("chapters", "PUT", "POST"),
    "video-put": ("video", "POST", "PUT"),
    "delete-post": ("delete", "DELETE", "POST"),
}
#: Keys whose string values are identifiers (rewritten into the variant's notation) besides any `*_id` or
#: `*_ids` key; URLs keep the canonical form inside them.
ID_KEYS = frozenset({"id"})
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_BODY_PATHS = re.compile(r"^/v1/videos/[^/]+/(copy|move|cut|concat)$")
_SPACES = re.compile(r"\s+")
#: Numeric parameters of the variants and their defaults.
PARAMS: dict[str, float] = {
    "clock_offset_seconds": 600.0,
    "list_lag_seconds": 3.0,
    "endpoint_ttl_seconds": 60.0,
    "title_cap": 128,
    "video_quota": 10,
    "refuse_after": 0,
    "quota_status": 400,
    "processing_concurrency": 2,
    "queue_seconds": 1.0,
    "patch_body_cap": 64 * 1024 * 1024,
}
#: The HTTP statuses a quota's 100106 may plausibly come with (spec 7 shows none; 429 is the rate limit's).
QUOTA_STATUSES = (400, 402, 403)
#: Parameters that are whole numbers (the others are seconds).
_WHOLE = (
    "title_cap",
    "video_quota",
    "refuse_after",
    "quota_status",
    "processing_concurrency",
    "patch_body_cap",
)


@dataclass(frozen=True)
class Variants:
    """The variants in force for one workspace and their parameters."""

    names: frozenset[str] = field(default_factory=frozenset)
    clock_offset_seconds: float = 600.0
    list_lag_seconds: float = 3.0
    endpoint_ttl_seconds: float = 60.0
    title_cap: int = 128
    video_quota: int = 10
    refuse_after: int = 0
    quota_status: int = 400
    processing_concurrency: int = 2
    queue_seconds: float = 1.0
    patch_body_cap: int = 64 * 1024 * 1024

    def has(self, name: str) -> bool:
        """Whether the variant is on."""
        return name in self.names

    def as_dict(self) -> dict[str, Any]:
        """The control API's answer."""
        return {
            "variants": sorted(self.names),
            "clock_offset_seconds": self.clock_offset_seconds,
            "list_lag_seconds": self.list_lag_seconds,
            "endpoint_ttl_seconds": self.endpoint_ttl_seconds,
            "title_cap": self.title_cap,
            "video_quota": self.video_quota,
            "refuse_after": self.refuse_after,
            "quota_status": self.quota_status,
            "processing_concurrency": self.processing_concurrency,
            "queue_seconds": self.queue_seconds,
            "patch_body_cap": self.patch_body_cap,
        }

    def refusal_code(self) -> int | None:
        """The code every create gets once refuse_after creates were accepted (REFUSING), or None."""
        for name, code in REFUSING.items():
            if name in self.names:
                return code
        return None

    # -- stored forms -----------------------------------------------------------------------------------

    def stored_title(self, title: str) -> str:
        """A title as this service keeps it (tidy-text, then title-cap)."""
        if self.has("tidy-text"):
            title = _tidy(title)
        if self.has("title-cap"):
            title = title[: self.title_cap]
        return title

    def stored_description(self, description: str) -> str:
        """A description as this service keeps it (tidy-text)."""
        return _tidy(description) if self.has("tidy-text") else description

    def stored_name(self, name: str) -> str:
        """A material's file name as this service keeps it (tidy-text)."""
        return _tidy(name) if self.has("tidy-text") else name

    def stored_tags(self, tags: list[str]) -> list[str]:
        """Tags as this service keeps them (tags-tidy: lower-cased, the first of duplicates kept)."""
        if not self.has("tags-tidy"):
            return list(tags)
        return list(dict.fromkeys(tag.lower() for tag in tags))

    def stored_chapters(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Chapter items as this service keeps them (chapter-titles-trimmed)."""
        if not self.has("chapter-titles-trimmed"):
            return [dict(item) for item in items]
        return [{**item, "title": str(item["title"]).strip()} for item in items]

    # -- clock ------------------------------------------------------------------------------------------

    def clock_offset(self) -> float:
        """Seconds the service's clock runs ahead of the real one (negative: behind)."""
        if self.has("clock-ahead"):
            return self.clock_offset_seconds
        if self.has("clock-behind"):
            return -self.clock_offset_seconds
        return 0.0

    def date_header(self) -> str:
        """The HTTP Date header on the service's clock."""
        now = datetime.now(UTC) + timedelta(seconds=self.clock_offset())
        return format_datetime(now, usegmt=True)

    # -- lists ------------------------------------------------------------------------------------------

    def page_cap(self) -> int | None:
        """The most items a page holds whatever is asked (None: as asked)."""
        if self.has("page-cap-10"):
            return 10
        if self.has("page-cap-25"):
            return 25
        return None

    def listed_before(self) -> datetime | None:
        """Videos created after this (real time) are not in lists yet (list-lag); None: all are."""
        if not self.has("list-lag"):
            return None
        return datetime.now(UTC) - timedelta(seconds=self.list_lag_seconds)

    # -- methods ----------------------------------------------------------------------------------------

    def method_allowed(self, operation: str, method: str) -> bool:
        """Whether `method` is the one this service takes for an operation whose method the spec hides."""
        for name, (op, default, other) in METHOD_SWAPS.items():
            if op == operation and method in (default, other):
                return method == (other if self.has(name) else default)
        return True

    # -- answers ----------------------------------------------------------------------------------------

    def shape(self, body: Any, method: str, path: str, status: int) -> Any:
        """Rewrite an answer's JSON as this service would write it (ids, timestamps, originals, bodies)."""
        if 200 <= status < 300 and _BODY_PATHS.match(path):
            if self.has("empty-bodies"):
                return None
            if self.has("id-only-bodies") and isinstance(body, dict) and isinstance(body.get("data"), dict):
                body = {"data": {"id": body["data"].get("id")}}
        if isinstance(body, dict) and self.has("no-total"):
            pagination = (body.get("meta") or {}).get("pagination")
            if isinstance(pagination, dict):
                pagination.pop("total", None)
        if not (self.names & _REWRITING):
            return body
        return self._rewrite(body, None)

    def _rewrite(self, value: Any, key: str | None) -> Any:
        if isinstance(value, dict):
            return {k: self._rewrite(v, k) for k, v in value.items()}
        if isinstance(value, list):
            if self.has("no-original") and key == "assets":
                value = [a for a in value if not (isinstance(a, dict) and a.get("quality") == "original")]
            return [self._rewrite(v, key) for v in value]
        if isinstance(value, str) and key is not None:
            if (key in ID_KEYS or key.endswith(("_id", "_ids"))) and _UUID.match(value):
                return self.id_out(value)
            if key.endswith("_at") or key == "timestamp":
                return self.time_out(value)
        return value

    def id_out(self, value: str) -> str:
        """A canonical id in the notation this service answers with."""
        if self.has("ids-undashed"):
            return to_hex(value)
        if self.has("ids-upper"):
            return value.upper()
        if self.has("ids-base58"):
            return to_base58(value)
        return value

    def time_out(self, value: str) -> str:
        """An RFC 3339 timestamp on this service's clock and precision."""
        offset = self.clock_offset()
        if not offset and not self.has("whole-seconds"):
            return value
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
        when += timedelta(seconds=offset)
        if self.has("whole-seconds"):
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")
        return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def header_text(self, raw: bytes) -> str:
        """A header value as this service decodes it."""
        return raw.decode("utf-8", errors="replace") if self.has("headers-utf8") else raw.decode("latin-1")

    def webhook_body(self, video_id: str, status: str, message: str | None) -> dict[str, Any]:
        """The media.update.status payload in this service's shape."""
        vid = self.id_out(video_id)
        if self.has("webhook-alt-shape"):
            obj: dict[str, Any] = {"media_id": vid, "status": status}
            if message is not None:
                obj["reason"] = message
            sent = self.time_out(datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
            return {"type": "media.update.status", "object": obj, "sent_at": sent}
        body: dict[str, Any] = {"event": "media.update.status", "data": {"id": vid, "status": status}}
        if message is not None:
            body["message"] = message
        return body


def _tidy(text: str) -> str:
    """Whitespace runs collapsed to one space, trimmed, Unicode NFC."""
    return unicodedata.normalize("NFC", _SPACES.sub(" ", text).strip())


#: Variants that rewrite values inside answers.
_REWRITING = frozenset(
    {"clock-ahead", "clock-behind", "whole-seconds", "ids-undashed", "ids-upper", "ids-base58", "no-original"}
)

NONE = Variants()


def make_variants(names: Iterable[str], **params: Any) -> Variants:
    """Variants from names and optional parameters; ValueError naming an unknown or conflicting name."""
    chosen = frozenset(names)
    unknown = sorted(chosen - set(VARIANTS))
    if unknown:
        raise ValueError(f"unknown variant {unknown[0]!r} (known: {', '.join(sorted(VARIANTS))})")
    for group in EXCLUSIVE:
        both = sorted(chosen & set(group))
        if len(both) > 1:
            raise ValueError(f"variants {' and '.join(both)} cannot be combined")
    unknown_params = sorted(k for k, v in params.items() if k not in PARAMS and v is not None)
    if unknown_params:
        raise ValueError(f"unknown variant parameter {unknown_params[0]!r} (known: {', '.join(PARAMS)})")
    numbers = dict(PARAMS)
    for name in PARAMS:
        value = params.get(name)
        if value is not None:
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a number >= 0")
            numbers[name] = float(value)
    for name in _WHOLE:
        if numbers[name] != int(numbers[name]):
            raise ValueError(f"{name} must be a whole number")
    if numbers["title_cap"] < 1:
        raise ValueError("title_cap must be a whole number >= 1")
    if numbers["processing_concurrency"] < 1:
        raise ValueError("processing_concurrency must be a whole number >= 1")
    if numbers["quota_status"] not in QUOTA_STATUSES:
        raise ValueError(f"quota_status must be one of {', '.join(map(str, QUOTA_STATUSES))}")
    return Variants(
        names=chosen,
        clock_offset_seconds=numbers["clock_offset_seconds"],
        list_lag_seconds=numbers["list_lag_seconds"],
        endpoint_ttl_seconds=numbers["endpoint_ttl_seconds"],
        title_cap=int(numbers["title_cap"]),
        video_quota=int(numbers["video_quota"]),
        refuse_after=int(numbers["refuse_after"]),
        quota_status=int(numbers["quota_status"]),
        processing_concurrency=int(numbers["processing_concurrency"]),
        queue_seconds=numbers["queue_seconds"],
        patch_body_cap=int(numbers["patch_body_cap"]),
    )
