"""The one table from an answer to its error class: 429 first, then error.code, then the HTTP status."""

from __future__ import annotations

import json
from typing import Any

import httpx

from videoferry.connectors.errors import (
    AccessDeniedError,
    AlreadyTakenError,
    BillingAccountExistsError,
    ClientError,
    ConflictError,
    EmailNotConfirmedError,
    EmailNotFoundError,
    EmailTakenError,
    FolderNotFoundError,
    InternalServerError,
    InvalidBase58Error,
    InvalidConfirmationTokenError,
    InvalidCredentialsError,
    InvalidIdentifierError,
    InvitationApprovedError,
    InvitationExistsError,
    IoError,
    JsonSyntaxError,
    JsonTypeError,
    LegacyValidationError,
    LimitReachedError,
    MethodNotAllowedError,
    MissingAuthorizationError,
    NameTakenError,
    NoBillingAccountError,
    NoPaymentMethodError,
    NoSuchEntityError,
    NotEnoughMoneyError,
    NotEnoughRequiredProductsError,
    NotFoundError,
    NotOwnerError,
    NotReadyError,
    OrderFieldError,
    PaymentRequiredError,
    RateLimitedError,
    ResetTokenError,
    ServerError,
    SubscriptionNotPaidError,
    TrialAddonNotAllowedError,
    UnauthorizedError,
    ValidationError,
    VideoApiError,
)

__all__ = ["CODE_CLASSES", "STATUS_CLASSES", "error_class_for", "error_from_response"]


#: error.code -> class. Every code of spec section 7.
CODE_CLASSES: dict[int, type[VideoApiError]] = {
    1: IoError,
    100101: MissingAuthorizationError,
    100102: UnauthorizedError,
    100103: AccessDeniedError,
    100104: InvalidCredentialsError,
    100105: InvalidConfirmationTokenError,
    100106: LimitReachedError,
    100107: NotOwnerError,
    400101: JsonSyntaxError,
    400102: JsonTypeError,
    400201: AlreadyTakenError,
    400202: EmailTakenError,
    400203: NameTakenError,
    400204: InvitationExistsError,
    400205: InvitationApprovedError,
    400206: BillingAccountExistsError,
    400207: NotEnoughMoneyError,
    400208: NoBillingAccountError,
    400209: NoPaymentMethodError,
    400210: NotEnoughRequiredProductsError,
    400211: TrialAddonNotAllowedError,
    400212: SubscriptionNotPaidError,
    400213: EmailNotConfirmedError,
    400214: EmailNotFoundError,
    400215: ResetTokenError,
    400216: OrderFieldError,
    400236: FolderNotFoundError,
    400301: InvalidIdentifierError,
    400302: InvalidBase58Error,
    400400: ValidationError,
    400404: NotFoundError,
    400405: MethodNotAllowedError,
    402402: LegacyValidationError,
    404404: NoSuchEntityError,
    409293: ConflictError,
    422100: NotReadyError,
    500500: InternalServerError,
}

#: HTTP status -> class, used only when error.code is absent or unknown.
STATUS_CLASSES: dict[int, type[VideoApiError]] = {
    401: UnauthorizedError,
    402: PaymentRequiredError,
    403: AccessDeniedError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    422: NotReadyError,
    429: RateLimitedError,
}


def error_class_for(code: int | None, status: int | None) -> type[VideoApiError]:
    """The one place that picks the error class: error.code first, then the HTTP status.

    Exception: HTTP 429 is always RateLimitedError, whatever the code (the emulator, and plausibly the
    service, send 429 with code 100106; that code with any other status is a quota, LimitReachedError).
    """
    if status == 429:
        return RateLimitedError
    if code is not None and code in CODE_CLASSES:
        return CODE_CLASSES[code]
    if status is not None:
        if status in STATUS_CLASSES:
            return STATUS_CLASSES[status]
        if status >= 500:
            return ServerError
        if 400 <= status < 500:
            return ClientError
    return VideoApiError


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def error_from_response(response: httpx.Response, *, operation: str | None = None) -> VideoApiError:
    """Build the typed error for a non-2xx answer (the body may be missing or not JSON)."""
    status = response.status_code
    request_id = response.headers.get("x-request-id")
    code: int | None = None
    message = ""
    detail: str | None = None
    invalid_params: list[dict[str, Any]] = []
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = _as_int(error.get("code"))
        raw_message = error.get("message")
        message = raw_message if isinstance(raw_message, str) else ""
        raw_detail = error.get("detail")
        detail = raw_detail if isinstance(raw_detail, str) else None
        params = error.get("invalid_params")
        if isinstance(params, list):
            invalid_params = [p for p in params if isinstance(p, dict)]
    if not message:
        message = response.reason_phrase or ""
    cls = error_class_for(code, status)
    return cls(
        message,
        status=status,
        code=code,
        detail=detail,
        invalid_params=invalid_params,
        request_id=request_id,
        operation=operation,
    )
