"""API errors with the spec's codes and the `{error: {...}}` body shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def now_rfc3339() -> str:
    """Current time as an RFC 3339 UTC string with fractional seconds."""
    return rfc3339(datetime.now(UTC))


def rfc3339(value: datetime) -> str:
    """Format a UTC datetime as RFC 3339 with microseconds and a Z suffix."""
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
