"""API errors with the spec's codes and the `{error: {...}}` body shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any


def now_rfc3339() -> str:
    """Current time as an RFC 3339 UTC string with fractional seconds."""
    return rfc3339(datetime.now(UTC))


@lru_cache(maxsize=1 << 16)
def rfc3339(value: datetime) -> str:
    """Format a UTC datetime as RFC 3339 with microseconds and a Z suffix (kept once made: every listing
    formats the same stamps of the same videos again)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Invalid:
    """One invalid_params entry: the field to fix, why, and the accepted values."""

    name: str
    reason: str
    message: str


@dataclass
class ApiError(Exception):
    """An error answer: HTTP status, stable code, message and the optional parts of the body."""

    status: int
    code: int
    message: str
    detail: str | None = None
    invalid_params: list[Invalid] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.code, self.message)

    def body(self, path: str) -> dict[str, Any]:
        """The JSON body; 5xx carry path and timestamp instead of detail."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.status >= 500:
            err["path"] = path
            err["timestamp"] = now_rfc3339()
        elif self.detail is not None:
            err["detail"] = self.detail
        if self.invalid_params:
            err["invalid_params"] = [
                {"index": i, "name": p.name, "reason": p.reason, "message": p.message}
                for i, p in enumerate(self.invalid_params)
            ]
        return {"error": err}


def validation(*params: Invalid) -> ApiError:
    """400400 with one invalid_params entry per field."""
    return ApiError(400, 400400, "validation failed", invalid_params=list(params))


def not_found(what: str = "object") -> ApiError:
    """404 / 400404: missing or not visible to the token."""
    return ApiError(404, 400404, f"{what} not found")


def method_not_allowed() -> ApiError:
    """405 / 400405."""
    return ApiError(405, 400405, "method not allowed")


def internal(message: str = "internal server error") -> ApiError:
    """500 / 500500."""
    return ApiError(500, 500500, message)


def folder_missing(name: str) -> ApiError:
    """400236: the referenced project or folder does not exist."""
    return ApiError(
        400,
        400236,
        "folder not found",
        invalid_params=[Invalid(name, "not exists", "existing project or folder id")],
    )


def io_error(detail: str = "EOF") -> ApiError:
    """Code 1: body unreadable, empty or truncated."""
    return ApiError(400, 1, "io error", detail=detail)


# ------------------------------------------------------------------ auth and limits


def missing_auth() -> ApiError:
    """400 / 100101: no Authorization header."""
    return ApiError(400, 100101, "authorization header not found")


def bad_token() -> ApiError:
    """401 / 100102: the token is empty or unknown."""
    return ApiError(401, 100102, "unauthorized")


def access_denied() -> ApiError:
    """403 / 100103: the token's scope does not reach the object or the action (other projects, reading)."""
    return ApiError(403, 100103, "access denied")


def not_owner() -> ApiError:
    """403 / 100107: the token is not the workspace owner's."""
    return ApiError(403, 100107, "user is not owner")


def too_many_requests() -> ApiError:
    """429 / 100106 (LIMIT_REACHED)."""
    return ApiError(429, 100106, "too many requests")


#: The codes spec 7 marks as the workspace's billing or e-mail state (the refusal variants answer them).
NOT_ENOUGH_MONEY, NO_BILLING_ACCOUNT, NO_PAYMENT_METHOD = 400207, 400208, 400209
SUBSCRIPTION_NOT_PAID, EMAIL_NOT_CONFIRMED = 400212, 400213
#: Their messages.
WORKSPACE_STATES: dict[int, str] = {
    NOT_ENOUGH_MONEY: "not enough money",
    NO_BILLING_ACCOUNT: "no billing account",
    NO_PAYMENT_METHOD: "no payment method",
    SUBSCRIPTION_NOT_PAID: "subscription not paid",
    EMAIL_NOT_CONFIRMED: "email not confirmed",
}


def workspace_state(code: int) -> ApiError:
    """400 with one of WORKSPACE_STATES: the workspace's balance, billing or e-mail refuses a create."""
    return ApiError(400, code, WORKSPACE_STATES[code])


def quota_reached(status: int) -> ApiError:
    """100106 (LIMIT_REACHED) as a per-workspace quota, with the status the variant states (spec 7: "-")."""
    return ApiError(status, 100106, "limit reached")


def injected_fault(status: int) -> ApiError:
    """A fault rule's error answer: 500500 for 5xx, 400400 below."""
    return ApiError(status, 500500 if status >= 500 else 400400, "injected fault")


# ------------------------------------------------------------------ request parsing


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def type_error(name: str, value: Any, expected: str) -> ApiError:
    """400102: a field of an unexpected type."""
    return ApiError(
        400,
        400102,
        f"json: cannot unmarshal {_json_kind(value)} into Go struct field .{name} of type {expected}",
        detail=name,
    )


def bad_utf8(offset: int) -> ApiError:
    """400101: the body is not UTF-8."""
    return ApiError(400, 400101, "invalid character in JSON", detail=f"invalid UTF-8 at offset {offset}")


def bad_json(char: str, offset: int, context: str) -> ApiError:
    """400101: a JSON syntax error, with the character and its context."""
    return ApiError(
        400,
        400101,
        f"invalid character {char!r} at offset {offset}",
        detail=f"invalid character {char!r} near {context!r}",
    )


def bad_uuid(detail: str) -> ApiError:
    """400301: an identifier in none of the accepted notations."""
    return ApiError(400, 400301, "invalid uuid format", detail=detail)


def bad_base58() -> ApiError:
    """400302: a base58 identifier with characters outside the alphabet."""
    return ApiError(400, 400302, "invalid base58 identifier", detail="characters outside the base58 alphabet")


def bad_order(order: str) -> ApiError:
    """400216: `order` is not <field>.<asc|desc> of an orderable field."""
    return ApiError(400, 400216, "not allowed order field", detail=order)


# ------------------------------------------------------------------ resources


def no_such_entity() -> ApiError:
    """404 / 404404: a stream id that is not one of the event's."""
    return ApiError(404, 404404, "no such entity")


def video_changed() -> ApiError:
    """500 / 500500: the video's bytes were replaced while a cut was running."""
    return internal("the video changed during the cut")


def stream_not_pending(state: str) -> ApiError:
    """400400 without invalid_params: an event is updated only while its stream is pending."""
    return ApiError(
        400,
        400400,
        f"the event cannot be updated: its stream is {state}",
        detail=f"stream status {state}",
    )


def domain_taken() -> ApiError:
    """400201: the privacy domain is in the list already."""
    return ApiError(
        400,
        400201,
        "has already been taken",
        invalid_params=[Invalid("domain", "unique", "a domain not in the list yet")],
    )


def batch_name_taken() -> ApiError:
    """400203: another unique codes batch of the event has that name."""
    return ApiError(
        400,
        400203,
        "name is already taken",
        invalid_params=[Invalid("name", "unique", "a name not used by another batch of the event")],
    )


def not_exists(name: str, message: str) -> ApiError:
    """400400 `not exists`: a referenced object (project, video) is missing."""
    return validation(Invalid(name, "not exists", message))


def not_ready(name: str, message: str = "a video in status done") -> ApiError:
    """400400 `not ready`: the video is not in the state the operation needs."""
    return validation(Invalid(name, "not ready", message))


def not_integer(name: str) -> ApiError:
    """400400 `number`: a query parameter that is not an integer."""
    return validation(Invalid(name, "number", "integer"))


def out_of_range(name: str, low: int, high: int) -> ApiError:
    """400400 `range`: a query parameter outside low..high."""
    return validation(Invalid(name, "range", f"{low}..{high}"))
