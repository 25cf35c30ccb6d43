"""The chaos checks themselves: the window counter and the limit assertion can fail."""

from __future__ import annotations

import pytest

from tests.chaos.harness import RateFigures, max_in_window


def test_max_in_window_counts_half_open_windows() -> None:
    assert max_in_window([], 1.0) == 0
    assert max_in_window([0.0, 0.5, 0.999, 1.0, 1.5], 1.0) == 3  # [0.5, 1.5) holds 0.5, 0.999, 1.0
    assert max_in_window([5.0, 1.0, 1.2, 3.0], 1.0) == 2  # unsorted input
    assert max_in_window([0.1 * i for i in range(11)], 1.0) == 10  # 0.0 .. 1.0: 1.0 starts a new window
    assert max_in_window([0.099 * i for i in range(11)], 1.0) == 11


def test_eleven_calls_in_a_second_fail_the_check() -> None:
    RateFigures(calls=10, per_second=10, per_minute=300, refused_429=0).assert_inside_limits()
    with pytest.raises(AssertionError, match="11 API calls in one second"):
        RateFigures(calls=11, per_second=11, per_minute=11, refused_429=0).assert_inside_limits()
    with pytest.raises(AssertionError, match="301 API calls in one minute"):
        RateFigures(calls=301, per_second=10, per_minute=301, refused_429=0).assert_inside_limits()
