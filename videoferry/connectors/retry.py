"""Retry policy: tenacity backoff with jitter; creates whose outcome is unknown are never repeated."""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from videoferry.connectors.errors import (
    RateLimitedError,
    ServerError,
    ServiceSilentError,
    TransportError,
    UnknownOutcomeError,
    VideoApiError,
)

__all__ = [
    "CallKind",
    "RetryPolicy",
    "describe_failure",
    "should_retry",
    "unknown_outcome",
    "run_with_retries",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class CallKind(enum.Enum):
    """How safe it is to repeat a call whose outcome is unknown."""

    #: GET, PATCH update, PUT chapters, DELETE, move, a replace init (a session without bytes replaces
    #: nothing): repeating gives the same end state.
    IDEMPOTENT = "idempotent"
    #: init, /v2/video (upload, URL import, replace), copy, concat: a repeat may create a second object.
    CREATE = "create"
    #: cut: applied to the same video; a repeat would trim twice (caller checks version/updated_at).
    IN_PLACE = "in_place"


@dataclass(frozen=True)
class RetryPolicy:
    """At most max_attempts attempts, waits drawn from exponential backoff with full jitter."""

    max_attempts: int = 5
    initial_wait: float = 0.5
    max_wait: float = 10.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.initial_wait < 0 or self.max_wait < 0:
            raise ValueError("waits must not be negative")


def should_retry(exc: BaseException, kind: CallKind) -> bool:
    """Whether another attempt may be made after `exc` for a call of this kind."""
    if not isinstance(exc, VideoApiError) or isinstance(exc, UnknownOutcomeError | ServiceSilentError):
        return False
    if isinstance(exc, RateLimitedError):
        return True  # the server refused it before doing anything; the limiter pause spaces the repeat
    if isinstance(exc, TransportError):
        # Connect errors provably happened before anything was sent: safe for every kind.
        return kind is CallKind.IDEMPOTENT or not exc.sent
    if kind is CallKind.IDEMPOTENT:
        return exc.retryable
    return False


def unknown_outcome(exc: VideoApiError, kind: CallKind) -> VideoApiError:
    """For creates and in-place edits, turn "maybe applied" failures into UnknownOutcomeError; else `exc`."""
    if kind is CallKind.IDEMPOTENT or isinstance(exc, UnknownOutcomeError):
        return exc
    if isinstance(exc, TransportError) and exc.sent:
        cause = "timeout" if exc.timed_out else "connection"
    elif isinstance(exc, ServerError):
        cause = "server_error"
    else:
        return exc
    return UnknownOutcomeError(
        f"outcome unknown after {type(exc).__name__}",
        cause_kind=cause,
        status=exc.status,
        code=exc.code,
        request_id=exc.request_id,
        operation=exc.operation,
    )


def describe_failure(exc: VideoApiError) -> str:
    """What went wrong with one attempt, in words: the network failure, or the HTTP answer and its codes."""
    if isinstance(exc, TransportError):
        return exc.message or type(exc).__name__
    parts = [f"HTTP {exc.status}" if exc.status is not None else type(exc).__name__]
    if exc.code is not None:
        parts.append(f"code {exc.code}")
    if exc.request_id:
        parts.append(f"request id {exc.request_id}")
    text = ", ".join(parts)
    return f"{text}: {exc.message}" if exc.message else text


def _retry_logger(max_attempts: int) -> Callable[[RetryCallState], None]:
    def log_retry(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if not isinstance(exc, VideoApiError):
            return
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "retrying %s: attempt %d of %d failed (%s); next attempt in %.1f s",
            exc.operation or "call",
            state.attempt_number,
            max_attempts,
            describe_failure(exc),
            wait,
        )

    return log_retry


def run_with_retries(
    attempt: Callable[[int], T],
    *,
    kind: CallKind,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] | None = None,
) -> T:
    """Call attempt(n) (n from 1) until it succeeds, a non-retryable error occurs, or attempts run out.

    Errors that leave a create/in-place edit possibly applied surface as UnknownOutcomeError.
    """
    policy = policy or RetryPolicy()
    retrying = Retrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait_random_exponential(multiplier=policy.initial_wait, max=policy.max_wait),
        retry=retry_if_exception(lambda e: should_retry(e, kind)),
        before_sleep=_retry_logger(policy.max_attempts),
        reraise=True,
        sleep=sleep or time.sleep,
    )
    try:
        for state in retrying:
            with state:
                result = attempt(state.retry_state.attempt_number)
            if not state.retry_state.outcome or not state.retry_state.outcome.failed:
                return result
    except VideoApiError as exc:
        converted = unknown_outcome(exc, kind)
        if converted is exc:
            raise
        raise converted from exc
    raise AssertionError("unreachable: tenacity ends with a result or an exception")
