"""Support for the resources: answers as models, update payloads, deletes (videos too), redaction."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from videoferry.connectors.client.answers import data_of
from videoferry.connectors.client.transport import ErrorHook
from videoferry.connectors.errors import NotFoundError, ResponseFormatError, TransportError, VideoApiError
from videoferry.connectors.models import Pagination
from videoferry.core.redact import PLACEHOLDER, blank

if TYPE_CHECKING:
    from videoferry.connectors.client.live_models import Page

__all__ = [
    "REDACTED",
    "segment",
    "rfc3339",
    "day",
    "data_of",
    "as_model",
    "as_models",
    "given_fields",
    "present",
    "read_one",
    "read_page",
    "meta_of",
    "order_of",
    "redacting",
    "deleting",
]

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

#: What a secret is replaced with in an error's message, detail and invalid_params.
REDACTED = PLACEHOLDER
#: Shorter values are not searched for: blanking every "x" would garble a message and hide nothing.
MIN_SECRET = 3


def segment(value: str, what: str) -> str:
    """A path segment: an identifier in any notation, quoted; ValueError (naming `what`) when empty."""
    if not value or not str(value).strip():
        raise ValueError(f"{what} must not be empty")
    return quote(str(value).strip(), safe="")


def rfc3339(when: datetime) -> str:
    """An RFC 3339 UTC timestamp with fractional seconds (a naive datetime is taken as UTC)."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def day(value: date | str) -> str:
    """YYYY-MM-DD of a date (a datetime gives its own date) or of a string already in that form."""
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    try:
        if len(text) != 10:
            raise ValueError(text)
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise ValueError("expected a date as YYYY-MM-DD") from None


def as_model(model: type[M], data: Any, operation: str) -> M:
    """`data` as the model; ResponseFormatError naming only the model (never the values) otherwise."""
    failure = ""
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        failure = f"{exc.error_count()} field error(s)"
    # raised outside the except block: pydantic's error (it quotes the input) is not kept as the context
    raise ResponseFormatError(f"answer is not a {model.__name__} ({failure})", operation=operation)


def as_models(model: type[M], items: Any, operation: str) -> list[M]:
    """A JSON array as models (ResponseFormatError when it is not an array)."""
    if not isinstance(items, list):
        raise ResponseFormatError("answer has no data array", operation=operation)
    return [as_model(model, item, operation) for item in items]


def read_one(body: Any, model: type[M], operation: str, *, bare: bool = False) -> M:
    """The single object of an answer `{data: {...}}` (or a bare object, with bare=True) as the model."""
    return as_model(model, data_of(body, operation, bare=bare), operation)


def read_page(body: Any, model: type[M], operation: str) -> Page[M]:
    """`{meta: {pagination, order}, data: [...]}` as a Page (a missing meta gives an empty Pagination)."""
    from videoferry.connectors.client.live_models import (
        Page,  # imported by the resources that read pages of them
    )

    items = as_models(model, data_of(body, operation), operation)
    meta = meta_of(body)
    pagination = meta.get("pagination")
    return Page(
        items=items,
        pagination=as_model(Pagination, pagination if isinstance(pagination, dict) else {}, operation),
        order=order_of(meta),
    )


def meta_of(body: Any) -> dict[str, Any]:
    """The answer's `meta` member ({} when the body has none, or not an object)."""
    meta = body.get("meta") if isinstance(body, dict) else None
    return meta if isinstance(meta, dict) else {}


def order_of(meta: Mapping[str, Any]) -> dict[str, str]:
    """A list answer's `meta.order` as text ({} when missing or not an object)."""
    order = meta.get("order")
    return {str(k): str(v) for k, v in order.items()} if isinstance(order, dict) else {}


def _scrub_value(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return blank(value, secrets)
    if isinstance(value, dict):
        return {k: _scrub_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v, secrets) for v in value]
    return value


def present(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Only the given (non-None) fields, in their order: a call's optional parameters or payload fields."""
    return {k: v for k, v in fields.items() if v is not None}


def given_fields(fields: Mapping[str, Any], needs: str) -> dict[str, Any]:
    """An update's payload: only the given (non-None) fields; ValueError("<needs> needs at least one field")
    when none is given."""
    payload = present(fields)
    if not payload:
        raise ValueError(f"{needs} needs at least one field")
    return payload


def redacting(secrets: Iterable[str | None], then: ErrorHook | None = None) -> ErrorHook:
    """An error hook that blanks the request's secrets in an error's message, detail and invalid_params.

    The service's error.detail may quote a rejected value (spec 7), so a refused password, stream key or
    poster URL could otherwise reach str(exc), a log line or a traceback. `then` runs afterwards.
    """
    values = sorted({s for s in secrets if s and len(s) >= MIN_SECRET}, key=len, reverse=True)

    def hook(exc: VideoApiError, number: int) -> httpx.Response | None:
        if values:
            exc.message = blank(exc.message, values)
            exc.detail = blank(exc.detail, values) if exc.detail is not None else None
            exc.invalid_params = [_scrub_value(p, values) for p in exc.invalid_params]
            exc.args = (str(exc),)
        return then(exc, number) if then is not None else None

    return hook


def deleting(operation: str) -> ErrorHook:
    """An error hook for deletes: a 404 on a repeated attempt after an unanswered one counts as deleted."""
    ambiguous = False

    def hook(exc: VideoApiError, number: int) -> httpx.Response | None:
        nonlocal ambiguous
        if isinstance(exc, NotFoundError) and number > 1 and ambiguous:
            log.info("%s: 404 after an unanswered attempt; treating as deleted", operation)
            return httpx.Response(200, json={"data": {"success": True}})
        if (isinstance(exc, TransportError) and exc.sent) or (exc.status or 0) >= 500:
            ambiguous = True
        return None

    return hook
