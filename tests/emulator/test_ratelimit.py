"""Limits (8): per-token sliding windows of 1 s and 60 s, 429 without Retry-After, refusals not counted."""

from __future__ import annotations

import httpx

from videoferry.emulator.control import EmulatorControl
from videoferry.emulator.ratelimit import SlidingWindowLimiter


def test_one_second_window_slides() -> None:
    limiter = SlidingWindowLimiter()
    assert [limiter.try_acquire("t", 3, 0, now=10.0 + i * 0.1) for i in range(5)] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert limiter.try_acquire("t", 3, 0, now=10.95) is False
    assert (
        limiter.try_acquire("t", 3, 0, now=11.0) is True
    )  # the hit at 10.0 has left the window (now - 1, now]
    assert limiter.try_acquire("t", 3, 0, now=11.05) is False
    assert limiter.try_acquire("other", 3, 0, now=10.5) is True


def test_minute_window_and_refusals_not_counted() -> None:
    limiter = SlidingWindowLimiter()
    assert all(limiter.try_acquire("t", 0, 5, now=float(i)) for i in range(5))
    assert not any(limiter.try_acquire("t", 0, 5, now=10.0 + i) for i in range(40))
    assert (
        limiter.try_acquire("t", 0, 5, now=60.5) is True
    )  # only the hit at 0.0 has left; refusals never counted
    assert limiter.try_acquire("t", 0, 5, now=60.6) is False


def test_http_minute_limit_exact(emu_control: EmulatorControl) -> None:
    ws = emu_control.create_workspace(rate_per_second=0, rate_per_minute=8)
    statuses = [httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).status_code for _ in range(12)]
    assert statuses == [200] * 8 + [429] * 4
    refused = httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers)
    assert refused.json()["error"]["code"] == 100106
    assert "retry-after" not in refused.headers
    assert not any(h.lower().startswith("ratelimit") for h in refused.headers)
    log = emu_control.requests(ws.workspace_id)
    assert [e["api"] for e in log] == [True] * 8 + [False] * 5
    upload = httpx.post(f"{ws.upload_url}/v2/init", headers=ws.headers, json={})
    assert upload.status_code == 429  # both hosts share the token's budget


def test_http_second_limit(emu_control: EmulatorControl) -> None:
    ws = emu_control.create_workspace(rate_per_second=3, rate_per_minute=0)
    with httpx.Client(base_url=ws.base_url, headers=ws.headers) as client:
        statuses = [client.get("/v1/videos").status_code for _ in range(30)]
    assert set(statuses) <= {200, 429}
    times = [e["time"] for e in emu_control.requests(ws.workspace_id) if e["api"]]
    assert all(later - earlier >= 1.0 - 0.05 for earlier, later in zip(times, times[3:], strict=False))
    if times[-1] - times[0] < 1.0 + 0.05 * 30:
        assert 429 in statuses


def test_default_limits_and_per_token_budgets(emu_control: EmulatorControl) -> None:
    ws = emu_control.create_workspace()
    other = emu_control.create_workspace()
    with httpx.Client(base_url=ws.base_url, headers=ws.headers) as client:
        statuses = [client.get("/v1/videos").status_code for _ in range(11)]
    assert statuses[:10] == [200] * 10
    times = [e["time"] for e in emu_control.requests(ws.workspace_id)]
    if times[10] - times[0] < 0.9:
        assert statuses[10] == 429
    assert httpx.get(f"{other.base_url}/v1/videos", headers=other.headers).status_code == 200


def test_limits_can_be_changed(emu_control: EmulatorControl) -> None:
    ws = emu_control.create_workspace(rate_per_second=0, rate_per_minute=1)
    assert httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).status_code == 200
    assert httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).status_code == 429
    emu_control.set_limits(ws, rate_per_minute=0)
    assert [httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).status_code for _ in range(3)] == [
        200
    ] * 3


def test_control_api_and_unauthenticated_calls_are_not_counted(emu_control: EmulatorControl) -> None:
    ws = emu_control.create_workspace(rate_per_second=0, rate_per_minute=2)
    for _ in range(5):
        emu_control.videos(ws)
        emu_control.create_project(ws)
        httpx.get(f"{ws.base_url}/v1/videos")
        httpx.get(f"{ws.base_url}/v1/videos", headers={"Authorization": "Bearer wrong"})
    assert [httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).status_code for _ in range(3)] == [
        200,
        200,
        429,
    ]
