"""The faulted run's floor: the admitted calls as early as the windows allow, every 429 pausing them all."""

from __future__ import annotations

from typing import Any

from bench.fault_time import PAUSE_AFTER_429, paused_least


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
