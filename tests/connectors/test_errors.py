"""The code -> class table, the status fallback, and parsing of error bodies into typed errors."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from videoferry.connectors import error_table as T
from videoferry.connectors import errors as E
from videoferry.connectors.retry import CallKind, should_retry, unknown_outcome

#: The spec lives beside the repository: CI runs a fresh clone of main with `shared/` next to it.
REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC = REPO_ROOT.parent / "shared" / "spec" / "video-api.md"


def _spec_codes() -> dict[int, tuple[str, str]]:
    """(code -> (http, retry column)) from the Codes table of spec section 7; fails without the spec."""
    if not SPEC.is_file():
        pytest.fail(f"the service spec is missing: expected {SPEC} (shared/ beside the repository)")
    rows: dict[int, tuple[str, str]] = {}
    text = SPEC.read_text(encoding="utf-8")
    section = text[text.index("### Codes") : text.index("### Handling rules")]
    for line in section.splitlines():
        m = re.match(r"^\| (\d+) \| ([^|]*) \| ([^|]*) \| (\w+) \|", line)
        if m:
            rows[int(m.group(1))] = (m.group(2).strip(), m.group(4).strip())
    return rows


def test_every_spec_code_has_a_class_with_the_spec_retry_hint() -> None:
    codes = _spec_codes()
    assert len(codes) >= 35
    for code, (_http, retry) in codes.items():
        cls = T.error_class_for(code, None)
        assert cls is T.CODE_CLASSES[code], code
        assert cls.retry_hint.value == retry, (code, cls.__name__)


def test_table_covers_exactly_the_spec_codes() -> None:
    codes = _spec_codes()
    assert len(codes) >= 35
    assert set(T.CODE_CLASSES) == set(codes)


@pytest.mark.parametrize("code", [100101, 100102, 100103, 100107])
def test_auth_codes_form_one_group_with_a_fix_hint(code: int) -> None:
    cls = T.error_class_for(code, 400)
    assert issubclass(cls, E.AuthError)
    err = cls("x", code=code, status=400)
    assert not err.retryable
    assert "VIDEOFERRY_TOKEN" in str(err) or "token" in str(err)


@pytest.mark.parametrize("code", [100104, 400216, 400400, 400404, 1])
def test_non_auth_codes_are_not_auth_errors(code: int) -> None:
    assert not issubclass(T.error_class_for(code, 400), E.AuthError)


def test_code_wins_over_status_then_status_fallbacks() -> None:
    assert T.error_class_for(400404, 404) is E.NotFoundError
    assert T.error_class_for(400404, 500) is E.NotFoundError  # code first
    assert T.error_class_for(None, 401) is E.UnauthorizedError
    assert T.error_class_for(None, 403) is E.AccessDeniedError
    assert T.error_class_for(987654, 404) is E.NotFoundError
    assert T.error_class_for(None, 429) is E.RateLimitedError
    assert T.error_class_for(100106, 429) is E.RateLimitedError  # 429 is the rate-limit signal
    assert T.error_class_for(100106, 403) is E.LimitReachedError
    assert T.error_class_for(None, 503) is E.ServerError
    assert T.error_class_for(None, 418) is E.ClientError
    assert T.error_class_for(None, None) is E.VideoApiError


def test_retryable_flags_follow_the_retry_column() -> None:
    assert E.ServerError("x").retryable
    assert E.InternalServerError("x").retryable
    assert E.RateLimitedError("x").retryable
    assert E.TransportError("x").retryable
    assert E.NotReadyError("x").retryable
    assert not E.ValidationError("x").retryable
    assert not E.NotFoundError("x").retryable
    assert not E.LimitReachedError("x").retryable
    assert E.LimitReachedError.retry_hint is E.RetryHint.LATER
    assert not E.UnknownOutcomeError("x", cause_kind="timeout").retryable


def _response(status: int, body: object = None, headers: dict[str, str] | None = None) -> httpx.Response:
    request = httpx.Request("GET", "http://127.0.0.1/v1/videos/x")
    if body is None:
        return httpx.Response(status, headers=headers, request=request)
    return httpx.Response(status, json=body, headers=headers, request=request)


def test_error_body_is_parsed_into_fields() -> None:
    body = {
        "error": {
            "code": 400400,
            "message": "validation failed",
            "detail": "per_page",
            "invalid_params": [{"index": 0, "name": "per_page", "reason": "oneof", "message": "1..100"}],
        }
    }
    err = T.error_from_response(_response(400, body, {"X-Request-ID": "rid-1"}), operation="list_videos")
    assert type(err) is E.ValidationError
    assert (err.status, err.code, err.message, err.detail, err.request_id) == (
        400,
        400400,
        "validation failed",
        "per_page",
        "rid-1",
    )
    assert err.invalid_params[0]["name"] == "per_page"
    assert "per_page" in str(err) and "rid-1" in str(err) and "400400" in str(err)


def test_missing_or_non_json_body_falls_back_to_status() -> None:
    err = T.error_from_response(_response(502))
    assert type(err) is E.ServerError and err.code is None and err.status == 502
    request = httpx.Request("GET", "http://127.0.0.1/")
    html = httpx.Response(404, content=b"<html>nope</html>", request=request)
    assert type(T.error_from_response(html)) is E.NotFoundError


def test_message_never_selects_the_class() -> None:
    body = {"error": {"code": 400404, "message": "unauthorized rate limit internal error"}}
    assert type(T.error_from_response(_response(404, body))) is E.NotFoundError


def test_string_codes_are_accepted() -> None:
    body = {"error": {"code": "400216", "message": "bad order"}}
    assert type(T.error_from_response(_response(400, body))) is E.OrderFieldError


def test_retry_decisions_by_call_kind() -> None:
    pre = E.TransportError("ConnectError", sent=False)
    post = E.TransportError("ReadTimeout", sent=True, timed_out=True)
    five = E.ServerError("x", status=503, request_id="r")
    limited = E.RateLimitedError("x", status=429)
    bad = E.ValidationError("x", status=400)
    for kind in CallKind:
        assert should_retry(pre, kind)
        assert should_retry(limited, kind)
        assert not should_retry(bad, kind)
    assert should_retry(post, CallKind.IDEMPOTENT) and should_retry(five, CallKind.IDEMPOTENT)
    for kind in (CallKind.CREATE, CallKind.IN_PLACE):
        assert not should_retry(post, kind) and not should_retry(five, kind)
        converted = unknown_outcome(five, kind)
        assert isinstance(converted, E.UnknownOutcomeError)
        assert (converted.status, converted.request_id, converted.cause_kind) == (503, "r", "server_error")
        assert unknown_outcome(post, kind).cause_kind == "timeout"  # type: ignore[attr-defined]
        assert unknown_outcome(bad, kind) is bad
    assert unknown_outcome(five, CallKind.IDEMPOTENT) is five
