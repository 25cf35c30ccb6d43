"""The faulted run's floor: the admitted calls as early as the windows allow, every 429 pausing them all."""

from __future__ import annotations

from typing import Any

from bench.fault_time import PAUSE_AFTER_429, breakdown, paused_least


def _calls(pattern: str) -> list[dict[str, Any]]:
    """`a`: an admitted API call, `r`: a 429, `u`: an upload request (no API room), in that order."""
    shapes = {"a": {"api": True, "status": 200}, "r": {"api": False, "status": 429}, "u": {"status": 204}}
    return [dict(shapes[c]) for c in pattern]


def test_without_429s_it_is_the_windows_alone() -> None:
    assert paused_least(_calls("a" * 25), 10, 300) == 2.0  # the 21st..25th call in the third second
    assert paused_least(_calls("a" * 4), 1, 3) == 60.0  # the 4th waits for the first to leave the minute


def test_each_429_holds_every_later_call_for_the_pause() -> None:
    assert paused_least(_calls("ara"), 10, 300) == PAUSE_AFTER_429
    assert paused_least(_calls("arara"), 10, 300) == 2 * PAUSE_AFTER_429
    assert paused_least(_calls("aruua"), 1, 300) == PAUSE_AFTER_429  # upload requests take no room
    assert paused_least(_calls("aaar"), 10, 300) == 0.0  # a 429 after the last call costs nothing here


def test_the_note_gives_the_paused_floor_only_for_a_client_that_pauses_everyone() -> None:
    inits = [
        {"time": 100.0 + n, "method": "POST", "path": "/v2/init", "status": 200, "api": True}
        for n in range(3)
    ]
    inits.insert(1, {"time": 100.5, "method": "POST", "path": "/v2/init", "status": 429, "api": False})
    _, ours = breakdown(inits, 99.0, 4.0, (10, 300))
    _, theirs = breakdown(inits, 99.0, 4.0, (10, 300), pauses_everyone=False)
    assert "need at least 0.0 s at 10/s and 300/min" in ours and "need at least 0.0 s" in theirs
    assert f"{PAUSE_AFTER_429:.1f} s with its 1 429s each pausing every call" in ours
    assert "pausing every call" not in theirs
