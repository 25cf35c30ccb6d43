"""Where a faulted run's time goes, read from the emulator's request log: phases, idle gaps, faults."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.ratelog import earliest, kind, next_slot
from bench.timeline import CREATES
from videoferry.connectors.limiter import DEFAULT_PAUSE_SECONDS

#: A gap this long with no request at all (API call or upload bytes) counts as idle: the client waited.
IDLE_GAP = 1.0


#: How many of the longest gaps the note describes (what came before and after each).
SHOWN_GAPS = 5
#: What a 429 costs everyone: no call for this long after it (spec: "After a 429, wait at least 5 seconds
#: before repeating"; DESIGN.md: a 429 pauses everyone): the limiter's own pause.
PAUSE_AFTER_429 = DEFAULT_PAUSE_SECONDS


def paused_least(ordered: Sequence[dict[str, Any]], per_second: int, per_minute: int) -> float:
    """The least time the run's admitted API calls need, in the order they came, when every 429 the run met
    (where it came among them) stops all calls for PAUSE_AFTER_429: each call as early as both windows and
    the last pause allow (the 429 itself goes at once and takes no room, as the service counts it)."""
    sent: list[float] = []
    now = paused_until = 0.0
    for entry in ordered:
        if entry.get("status") == 429:
            paused_until = max(now, paused_until) + PAUSE_AFTER_429
        elif entry.get("api"):
            now = next_slot(sent, max(now, paused_until), per_second, per_minute)
            sent.append(now)
    return now


def _idle(times: Sequence[float], start: float, end: float) -> tuple[float, int]:
    """(seconds, count) of the gaps of at least IDLE_GAP between consecutive requests inside [start, end]."""
    inside = [t for t in times if start <= t <= end]
    gaps = [b - a for a, b in zip(inside, inside[1:], strict=False) if b - a >= IDLE_GAP]
    return float(sum(gaps)), len(gaps)


def _request(entry: dict[str, Any]) -> str:
    """`init 503`, `list 200 (answer lost)`: a request as a gap's neighbour."""
    lost = " (answer lost)" if entry.get("dropped") else ""
    return f"{kind(entry)} {entry.get('status')}{lost}"


def longest_gaps(ordered: Sequence[dict[str, Any]], started: float) -> str:
    """The SHOWN_GAPS longest gaps with no request: when, how long, the request before and the one after."""
    pairs = list(zip(ordered, ordered[1:], strict=False))
    pairs.sort(key=lambda p: float(p[1]["time"]) - float(p[0]["time"]), reverse=True)
    shown = [
        f"{float(b['time']) - float(a['time']):.1f} s at {float(a['time']) - started:.0f} s after "
        f"{_request(a)}, ended by {_request(b)}"
        for a, b in pairs[:SHOWN_GAPS]
        if float(b["time"]) - float(a["time"]) >= IDLE_GAP
    ]
    return "; ".join(shown) or "none"


def breakdown(
    entries: Sequence[dict[str, Any]],
    started: float,
    seconds: float,
    limits: tuple[int, int],
    *,
    pauses_everyone: bool = True,
) -> tuple[float, str]:
    """(idle seconds while creates were left, the note): the run's phases (start -> first create -> last
    create -> last request -> exit), the idle gaps in each (no request for IDLE_GAP or more: backoffs,
    settle waits, a transfer slot held while nothing moves), and what the faults did (lost create answers,
    5xx and cut answers by kind, 429s) beside what the run sent for them (lists, GETs, deletes, inits), and
    the least time the limits (per second, per minute) allow for every API call the service admitted: a gap
    is often the client waiting for the minute's budget, which the faults' extra calls spent; and for a client
    whose 429 pauses every call (`pauses_everyone`: videoferry, not the careful script, whose threads each
    wait on their own), that least time with its 429s' pauses (paused_least)."""
    ordered = sorted(entries, key=lambda e: float(e["time"]))
    times = [float(e["time"]) for e in ordered]
    creates = [float(e["time"]) for e in ordered if e.get("api") and kind(e) in CREATES]
    if not creates:
        return 0.0, "no create reached the service"
    first, last, end = creates[0], creates[-1], times[-1]
    idle_creating, gaps_creating = _idle(times, first, last)
    idle_tail, gaps_tail = _idle(times, last, end)
    calls = Counter(kind(e) for e in ordered if e.get("api"))
    lost = Counter(kind(e) for e in ordered if e.get("dropped"))
    failed = Counter(kind(e) for e in ordered if int(e.get("status") or 0) >= 500 and not e.get("dropped"))
    limited = sum(1 for e in ordered if e.get("status") == 429)
    during = Counter(kind(e) for e in ordered if e.get("api") and first <= float(e["time"]) <= last)
    admitted = sum(1 for e in ordered if e.get("api"))
    least = earliest(admitted, *limits)
    paused = paused_least(ordered, *limits)
    with_pauses = (
        f", {paused:.1f} s with its {limited} 429s each pausing every call {PAUSE_AFTER_429:g} s where "
        f"they came ({seconds / paused if paused else 0.0:.2f} x that)"
        if pauses_everyone
        else ""
    )

    def show(counts: Counter[str]) -> str:
        return ", ".join(f"{n} {k}" for k, n in counts.most_common()) or "none"

    note = (
        f"start {first - started:.1f} s (-> first create), creating {last - first:.1f} s (first -> last "
        f"create; idle {idle_creating:.1f} s in {gaps_creating} gaps of {IDLE_GAP:g} s or more with no "
        f"request), tail "
        f"{end - last:.1f} s (-> last request; idle {idle_tail:.1f} s in {gaps_tail} gaps), exit "
        f"{started + seconds - end:.1f} s; the {admitted} API calls admitted need at least {least:.1f} s "
        f"at {limits[0]}/s and {limits[1]}/min (the run took {seconds / least if least else 0.0:.2f} x "
        f"that){with_pauses}; faults: answers lost after the "
        f"commit {show(lost)}; 5xx or cut "
        f"{show(failed)}; {limited} 429s; calls while creating {show(during)}; all calls {show(calls)}; the "
        f"longest gaps: {longest_gaps(ordered, started)}"
    )
    return idle_creating, note
