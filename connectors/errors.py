"""Typed video API errors: one base class and a subclass per error.code of spec section 7."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

__all__ = [
    "RetryHint",
    "VideoApiError",
    "TransportError",
    "ServiceSilentError",
    "UnknownOutcomeError",
    "ResponseFormatError",
    "ClientError",
    "AuthError",
    "MissingAuthorizationError",
    "UnauthorizedError",
    "AccessDeniedError",
    "NotOwnerError",
    "InvalidRequestError",
    "IoError",
    "InvalidCredentialsError",
    "InvalidConfirmationTokenError",
    "LimitReachedError",
    "JsonSyntaxError",
    "JsonTypeError",
    "AlreadyTakenError",
    "EmailTakenError",
    "NameTakenError",
    "InvitationExistsError",
    "InvitationApprovedError",
    "BillingAccountExistsError",
    "BillingError",
    "NotEnoughMoneyError",
    "NoBillingAccountError",
    "NoPaymentMethodError",
    "NotEnoughRequiredProductsError",
    "TrialAddonNotAllowedError",
    "SubscriptionNotPaidError",
    "EmailNotConfirmedError",
    "EmailNotFoundError",
    "ResetTokenError",
    "OrderFieldError",
    "FolderNotFoundError",
    "InvalidIdentifierError",
    "InvalidBase58Error",
    "ValidationError",
    "LegacyValidationError",
    "PaymentRequiredError",
    "NotFoundError",
    "NoSuchEntityError",
    "MethodNotAllowedError",
    "ConflictError",
    "NotReadyError",
    "RateLimitedError",
    "ServerError",
    "InternalServerError",
]


class RetryHint(enum.Enum):
    """The Retry column of spec section 7: can repeating the identical request help."""

    NO = "no"  # repeating the identical request cannot help
    LATER = "later"  # may succeed later (human action, quota, billing): not retried automatically
    YES = "yes"  # may succeed: retried with backoff by the client


class VideoApiError(Exception):
    """Base of every client error: status, error.code, message, detail, invalid_params, X-Request-ID."""

    retry_hint: ClassVar[RetryHint] = RetryHint.NO
    #: What the user should do about it; shown in str() (never contains secrets).
    hint: ClassVar[str] = ""

    def __init__(
        self,
        message: str = "",
        *,
        status: int | None = None,
        code: int | None = None,
        detail: str | None = None,
        invalid_params: Sequence[Mapping[str, Any]] = (),
        request_id: str | None = None,
        operation: str | None = None,
    ) -> None:
        self.message = message
        self.status = status
        self.code = code
        self.detail = detail
        self.invalid_params: list[dict[str, Any]] = [dict(p) for p in invalid_params]
        self.request_id = request_id
        self.operation = operation
        super().__init__(self._render())

    @property
    def retryable(self) -> bool:
        """True when the client's automatic backoff may repeat the request (Retry = yes)."""
        return self.retry_hint is RetryHint.YES

    def _render(self) -> str:
        parts = [type(self).__name__]
        if self.operation:
            parts.append(f"in {self.operation}")
        if self.status is not None:
            parts.append(f"status={self.status}")
        if self.code is not None:
            parts.append(f"code={self.code}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        text = " ".join(parts)
        if self.message:
            text += f": {self.message}"
        if self.invalid_params:
            names = ", ".join(str(p.get("name", "?")) for p in self.invalid_params)
            text += f" (invalid: {names})"
        if self.hint:
            text += f". {self.hint}"
        return text

    def __str__(self) -> str:
        return self._render()


class TransportError(VideoApiError):
    """The network failed (refused, DNS, timeout, TLS, reset): no HTTP answer; the message names the host."""

    retry_hint = RetryHint.YES

    def __init__(
        self,
        message: str = "",
        *,
        sent: bool = True,
        timed_out: bool = False,
        operation: str | None = None,
        host: str | None = None,
        failure: str | None = None,
    ) -> None:
        #: False when the failure provably happened before the request was sent (connect error/timeout).
        self.sent = sent
        self.timed_out = timed_out
        #: host:port that failed (never a path or query: an upload endpoint's path is a secret).
        self.host = host
        #: What failed: refused, dns, timeout, tls, reset, unreachable or network (the message says it).
        self.failure = failure
        super().__init__(message, operation=operation)


class ServiceSilentError(TransportError):
    """Not sent: the service has answered nothing for its bound (VIDEOFERRY_OUTAGE_SECONDS); never retried."""

    retry_hint = RetryHint.NO

    def __init__(self, message: str = "", *, operation: str | None = None) -> None:
        super().__init__(message, sent=False, operation=operation, failure="silent")


class UnknownOutcomeError(VideoApiError):
    """A create or in-place edit may or may not have happened: reconcile via the ledger; never repeat it."""

    retry_hint = RetryHint.NO
    hint = "The service may have applied it; look it up (list by project and title) before trying again"

    def __init__(
        self,
        message: str = "",
        *,
        cause_kind: str,
        status: int | None = None,
        code: int | None = None,
        request_id: str | None = None,
        operation: str | None = None,
    ) -> None:
        #: "timeout", "connection", "server_error", "bad_response" or "no_body" (a 2xx that named no video)
        self.cause_kind = cause_kind
        super().__init__(message, status=status, code=code, request_id=request_id, operation=operation)


class ResponseFormatError(VideoApiError):
    """A 2xx answer whose body is not the documented JSON shape."""


class ClientError(VideoApiError):
    """A 4xx answer: the request itself is wrong; repeating it unchanged cannot help."""


class AuthError(ClientError):
    """The token is missing, invalid, of another workspace or lacks permission: fail the run fast."""

    hint = "Set VIDEOFERRY_TOKEN to a valid API token of the workspace that owns the target project"


class MissingAuthorizationError(AuthError):
    """100101: no Authorization header (HTTP 400, not 401)."""

    hint = "Set VIDEOFERRY_TOKEN (no Authorization header was sent)"


class UnauthorizedError(AuthError):
    """100102 / 401: token invalid, revoked, expired or of another workspace."""

    hint = (
        "The token is invalid, revoked, expired or belongs to another workspace; "
        "set VIDEOFERRY_TOKEN to a valid token of the target workspace"
    )


class AccessDeniedError(AuthError):
    """100103 / 403: the token has no access to this resource or scope."""

    hint = "The token lacks access to this resource; use a token of the workspace that owns it"


class NotOwnerError(AuthError):
    """100107: the action needs the workspace owner's token."""

    hint = "This action needs a token of the workspace owner"


class InvalidRequestError(ClientError):
    """The request could not be formed (illegal URL or header value); nothing reached the server."""


class IoError(ClientError):
    """1: body unreadable, empty or truncated."""


class InvalidCredentialsError(ClientError):
    """100104: sign-in credentials match no account."""


class InvalidConfirmationTokenError(ClientError):
    """100105: e-mail confirmation token unknown or expired."""


class LimitReachedError(ClientError):
    """100106: per-workspace quota reached."""

    retry_hint = RetryHint.LATER


class JsonSyntaxError(ClientError):
    """400101: invalid JSON."""


class JsonTypeError(ClientError):
    """400102: field of unexpected type."""


class AlreadyTakenError(ClientError):
    """400201: uniqueness violated."""


class EmailTakenError(AlreadyTakenError):
    """400202: account with this e-mail exists."""


class NameTakenError(AlreadyTakenError):
    """400203: entity with this name exists in the scope."""


class InvitationExistsError(AlreadyTakenError):
    """400204: invitation already sent."""


class InvitationApprovedError(AlreadyTakenError):
    """400205: invitation already accepted."""


class BillingAccountExistsError(AlreadyTakenError):
    """400206: billing account already attached."""


class BillingError(ClientError):
    """Plan, balance or payment problems."""


class NotEnoughMoneyError(BillingError):
    """400207: balance insufficient."""

    retry_hint = RetryHint.LATER


class NoBillingAccountError(BillingError):
    """400208: no billing account."""


class NoPaymentMethodError(BillingError):
    """400209: no payment method."""


class NotEnoughRequiredProductsError(BillingError):
    """400210: plan lacks a required product."""


class TrialAddonNotAllowedError(BillingError):
    """400211: add-ons not allowed on a trial plan."""


class SubscriptionNotPaidError(BillingError):
    """400212: unpaid invoices."""

    retry_hint = RetryHint.LATER


class PaymentRequiredError(BillingError):
    """HTTP 402 without a known code: plan or balance does not cover the operation."""


class EmailNotConfirmedError(ClientError):
    """400213: e-mail not confirmed."""

    retry_hint = RetryHint.LATER


class EmailNotFoundError(ClientError):
    """400214: no account for the e-mail."""


class ResetTokenError(ClientError):
    """400215: password-reset token unknown or expired."""


class OrderFieldError(ClientError):
    """400216: order names a field that cannot be sorted by, or the direction is not lowercase."""


class FolderNotFoundError(ClientError):
    """400236: referenced folder does not exist (checked before the video)."""


class InvalidIdentifierError(ClientError):
    """400301: identifier unparseable in every notation (says nothing about existence)."""


class InvalidBase58Error(InvalidIdentifierError):
    """400302: 21-22 character identifier with a character outside the base58 alphabet."""


class ValidationError(ClientError):
    """400400: validation failed (invalid_params); or a query parameter is missing (named in message)."""


class LegacyValidationError(ValidationError):
    """402402: unconfirmed legacy validation code."""


class NotFoundError(ClientError):
    """400404 / 404: object missing or not visible to the token."""


class NoSuchEntityError(NotFoundError):
    """404404: e.g. a QoS stream_id of another event or workspace."""


class MethodNotAllowedError(ClientError):
    """400405 / 405: the path does not support the method."""


class ConflictError(ClientError):
    """409293 / 409: state conflict."""

    retry_hint = RetryHint.LATER


class NotReadyError(ClientError):
    """422100 / 422: resource not ready yet."""

    retry_hint = RetryHint.YES


class RateLimitedError(VideoApiError):
    """429: over the rate limit; every caller pauses at least 5 s, then the request may be repeated."""

    retry_hint = RetryHint.YES


class ServerError(VideoApiError):
    """5xx: server error; retried with backoff (idempotent calls only)."""

    retry_hint = RetryHint.YES


class InternalServerError(ServerError):
    """500500: internal error (observed for a videos list with page 0)."""
