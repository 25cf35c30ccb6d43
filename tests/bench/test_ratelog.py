"""The request-log arithmetic the rate figures rest on: window counts, the limits' ceiling, refusals."""

from __future__ import annotations

import pytest

from bench.ratelog import (
    api_calls,
    breakdown,
    capacity,
    earliest,
    kind,
    max_in_window,
    refusal_windows,
    refused,
    tightest_span,
)


def test_max_in_window_is_half_open() -> None:
    assert max_in_window([0.0, 0.5, 1.0], 1.0) == 2  # 0.0 falls out of (0.0, 1.0]
    assert max_in_window([0.0, 0.5, 0.99], 1.0) == 3
    assert max_in_window([], 1.0) == 0


def test_capacity_follows_both_windows() -> None:
    # 10/s and 300/min: 10 at once, then 10 more every second; the 301st waits for the minute window.
    assert capacity(0.0, 10, 300) == 10
    assert capacity(1.0, 10, 300) == 20
    assert capacity(59.9, 10, 300) == 300
    assert capacity(60.0, 10, 300) == 310
    assert earliest(300, 10, 300) == 29.0
    assert earliest(301, 10, 300) == 60.0


def test_api_calls_refusals_and_breakdown() -> None:
    entries = [
        {"time": 0.0, "api": True, "method": "POST", "path": "/v2/init", "status": 200},
        {"time": 0.1, "api": False, "method": "PATCH", "path": "/upload/x", "status": 204},
        {"time": 0.2, "api": True, "method": "GET", "path": "/v1/videos", "status": 200},
        {"time": 0.3, "api": False, "method": "POST", "path": "/v2/init", "status": 429},
    ]
    assert len(api_calls(entries)) == 2
    assert refused(entries) == 1
    assert breakdown(api_calls(entries)) == "1 init, 1 list"
    assert refusal_windows(entries, per_second=2, per_minute=100) == "1 x 1 s window full"
    assert refusal_windows(entries, per_second=5, per_minute=2) == "1 x 60 s window full"


def test_tightest_span_is_the_closest_call_count_later() -> None:
    # Three calls per window: the 4th call after 0.0 comes at 1.2, after 0.5 at 1.45 (0.95 later).
    times = [0.0, 0.1, 0.5, 1.2, 1.3, 1.45]
    assert tightest_span(times, 3) == pytest.approx(0.95)
    assert tightest_span(list(reversed(times)), 3) == pytest.approx(0.95)  # order of the log does not matter
    assert tightest_span(times, 6) is None


def test_kind_names_the_finish_calls() -> None:
    def call(method: str, path: str) -> dict[str, object]:
        return {"method": method, "path": path}

    assert kind(call("PATCH", "/v1/videos/abc")) == "update"
    assert kind(call("PUT", "/v1/videos/abc/chapters")) == "chapters"
    assert kind(call("POST", "/v1/videos/abc/chapters")) == "chapters"
    assert kind(call("GET", "/v1/videos/abc")) == "get"
    assert kind(call("DELETE", "/v1/videos/abc")) == "DELETE videos"


def test_kind_never_names_an_upload_address() -> None:
    counted = [
        {"method": m, "path": f"/upload/secret{i}", "api": True} for i, m in enumerate(["PATCH", "HEAD"])
    ]
    assert breakdown(counted + [{"method": "PATCH", "path": "/upload/other", "api": True}]) == (
        "2 upload PATCH, 1 upload HEAD"
    )
