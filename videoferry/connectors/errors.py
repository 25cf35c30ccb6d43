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
    "WorkspaceRefusedError",
    "stops_run",
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


class WorkspaceRefusedError(ClientError):
    """The workspace's own state (quota, balance, subscription, e-mail) refused the call: no further create
    can succeed, so the run stops at the first one (nothing was made; a rerun resumes once it is fixed)."""

    retry_hint = RetryHint.LATER
    #: The code's name as spec section 7 writes it (shown in the run's last line).
    code_name: ClassVar[str] = ""

    def _render(self) -> str:
        """One line: the code and its name, the call and request id, what to do, and that a rerun resumes."""
        call = f" {self.operation}" if self.operation else ""
        request = f" (request {self.request_id})" if self.request_id else ""
        hint = self.hint[:1].lower() + self.hint[1:] if self.hint else "see the workspace's account"
        name = self.code_name or type(self).__name__
        return (
            f"the workspace refused{call}: {self.code} {name}{request}: {hint}; nothing further was sent:"
            " rerun the same command to resume"
        )


class IoError(ClientError):
    """1: body unreadable, empty or truncated."""


class InvalidCredentialsError(ClientError):
    """100104: sign-in credentials match no account."""


class InvalidConfirmationTokenError(ClientError):
    """100105: e-mail confirmation token unknown or expired."""


class LimitReachedError(WorkspaceRefusedError):
    """100106 (with any HTTP status but 429, which is the rate limit): per-workspace quota reached."""

    code_name = "LIMIT_REACHED"
    hint = "The workspace's quota is reached: raise it (plan) or free room in the workspace"


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


class NotEnoughMoneyError(BillingError, WorkspaceRefusedError):
    """400207: balance insufficient."""

    code_name = "NOT_ENOUGH_MONEY"
    hint = "The workspace's balance is insufficient: top it up"


class NoBillingAccountError(BillingError, WorkspaceRefusedError):
    """400208: no billing account."""

    retry_hint = RetryHint.NO
    code_name = "NO_BILLING_ACCOUNT"
    hint = "The workspace has no billing account: attach one"


class NoPaymentMethodError(BillingError, WorkspaceRefusedError):
    """400209: no payment method."""

    retry_hint = RetryHint.NO
    code_name = "NO_PAYMENT_METHOD"
    hint = "The workspace has no payment method: add one"


class NotEnoughRequiredProductsError(BillingError):
    """400210: plan lacks a required product."""


class TrialAddonNotAllowedError(BillingError):
    """400211: add-ons not allowed on a trial plan."""


class SubscriptionNotPaidError(BillingError, WorkspaceRefusedError):
    """400212: unpaid invoices."""

    code_name = "SUBSCRIPTION_NOT_PAID"
    hint = "The workspace has unpaid invoices: pay them"


class PaymentRequiredError(BillingError):
    """HTTP 402 without a known code: plan or balance does not cover the operation."""


class EmailNotConfirmedError(WorkspaceRefusedError):
    """400213: e-mail not confirmed."""

    code_name = "EMAIL_NOT_CONFIRMED"
    hint = "The workspace owner's e-mail is not confirmed: confirm it"


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


def stops_run(exc: BaseException) -> bool:
    """Whether a refusal is the token's or the workspace's, not the item's: it would refuse every further
    call alike, so the run stops at the first (AuthError, WorkspaceRefusedError)."""
    return isinstance(exc, AuthError | WorkspaceRefusedError)
