"""Reading the emulator's request log: API calls, 429s, busiest windows and the most the limits allow."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any


def api_calls(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests the rate limiter counted (API calls it admitted; endpoint bytes are not API calls)."""
    return [e for e in entries if e.get("api")]


def refused(entries: Iterable[dict[str, Any]]) -> int:
    """How many requests the service answered with 429."""
    return sum(1 for e in entries if e.get("status") == 429)


def kind(entry: dict[str, Any]) -> str:
    """A short name for an API call: init, create (POST /v2/video), list, get, update, chapters, a tus
    endpoint request (its path is a secret: not shown), other."""
    method, path = entry.get("method", ""), entry.get("path", "")
    if path == "/v2/init":
        return "init"
    if path == "/v2/video":
        return "create"
    if path == "/v1/videos" and method == "GET":
        return "list"
    if path.startswith("/v1/videos/") and method == "GET":
        return "get"
    if path.startswith("/v1/videos/") and path.endswith("/chapters"):
        return "chapters"
    if path.startswith("/v1/videos/") and path.count("/") == 3 and method in ("PATCH", "PUT", "POST"):
        return "update"
    if not path.startswith(("/v1/", "/v2/")):
        return f"{method} (tus endpoint)"  # an upload endpoint's path names the upload: a secret, never shown
    return f"{method} {path.split('/')[2] if path.count('/') > 1 else path}"


def breakdown(entries: Iterable[dict[str, Any]]) -> str:
    """`120 init, 3 list, ...` for a list of API calls."""
    counts = Counter(kind(e) for e in entries)
    return ", ".join(f"{n} {k}" for k, n in counts.most_common())


def max_in_window(times: Sequence[float], width: float) -> int:
    """The largest number of times falling in any half-open window (t - width, t]."""
    ordered = sorted(times)
    best = 0
    start = 0
    for end, t in enumerate(ordered):
        while ordered[start] <= t - width:
            start += 1
        best = max(best, end - start + 1)
    return best


def next_slot(times: list[float], not_before: float, per_second: int, per_minute: int) -> float:
    """The earliest time from `not_before` at which a strict sliding-window service admits a call after the
    calls admitted at `times` (in order)."""
    t = max(not_before, times[-1]) if times else not_before
    if len(times) >= per_second:
        t = max(t, times[-per_second] + 1.0)
    if len(times) >= per_minute:
        t = max(t, times[-per_minute] + 60.0)
    return t


def _schedule(per_second: int, per_minute: int) -> Iterator[float]:
    """Call times of a client that sends each call as early as a strict sliding-window service admits it."""
    times: list[float] = []
    while True:
        t = next_slot(times, 0.0, per_second, per_minute)
        times.append(t)
        yield t


def capacity(duration: float, per_second: int, per_minute: int) -> int:
    """The most calls a strict sliding-window service (per_second in 1 s, per_minute in 60 s) admits in
    [0, duration] (the ceiling of any run that long).
    """
    count = 0
    for t in _schedule(per_second, per_minute):
        if t > duration:
            return count
        count += 1
    raise AssertionError("unreachable")


def earliest(call: int, per_second: int, per_minute: int) -> float:
    """When the call-th call (from 1) can go at the earliest under those windows."""
    for n, t in enumerate(_schedule(per_second, per_minute), start=1):
        if n >= call:
            return t
    raise AssertionError("unreachable")


def refusal_windows(entries: Sequence[dict[str, Any]], per_second: int, per_minute: int) -> str:
    """For every 429, which of the service's windows was full when it came: `2 x 1 s window, 1 x 60 s`."""
    admitted = sorted(float(e["time"]) for e in entries if e.get("api"))
    found: Counter[str] = Counter()
    for e in entries:
        if e.get("status") != 429:
            continue
        t = float(e["time"])
        in_second = sum(1 for a in admitted if t - 1.0 < a <= t)
        in_minute = sum(1 for a in admitted if t - 60.0 < a <= t)
        if in_second >= per_second:
            found["1 s window full"] += 1
        elif in_minute >= per_minute:
            found["60 s window full"] += 1
        else:
            found["neither window full (injected?)"] += 1
    return ", ".join(f"{n} x {k}" for k, n in found.most_common()) or "none"


def tightest_span(times: Sequence[float], count: int) -> float | None:
    """The shortest time from a call to the count-th call after it (None with count calls or fewer).

    A service that admits `count` calls per window of W seconds refuses one as soon as this is under W;
    `tightest_span - W` is the headroom the client's spacing left after the trip to the service.
    """
    ordered = sorted(times)
    if len(ordered) <= count:
        return None
    return min(ordered[i + count] - ordered[i] for i in range(len(ordered) - count))
