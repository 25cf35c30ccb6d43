"""end_to_end's burst figures: a client at half the per-second limit reads about 0.5, at the limit 1."""

from __future__ import annotations

from typing import Any

import pytest

from bench.end_to_end import BURST_PER_MINUTE, Run, burst
from bench.results import verdict


def _log(started: float, spacing: float, creates: int = 300) -> list[dict[str, Any]]:
    """A preflight list, then `creates` inits `spacing` seconds apart (the emulator's request log)."""
    calls = [{"time": started + 1.0, "method": "GET", "path": "/v1/videos", "api": True, "status": 200}]
    calls += [
        {
            "time": started + 1.1 + n * spacing,
            "method": "POST",
            "path": "/v2/init",
            "api": True,
            "status": 200,
        }
        for n in range(creates)
    ]
    return calls


# Evenly spaced at the limit reads 30.0 / 29.9 s: the least span counts whole-second bursts of 10 (the
# first shared with the preflight list), which an even spread beats by up to one interval.
@pytest.mark.parametrize(("spacing", "low", "high"), [(0.1, 0.95, 1.01), (0.2, 0.45, 0.55)])
def test_creates_per_second_against_the_limit(spacing: float, low: float, high: float) -> None:
    run = Run(300, 1, "plain", per_minute=BURST_PER_MINUTE)
    rate, ratio = burst(run, _log(1000.0, spacing), 1000.0)
    assert rate.name == "e2e_300_plain_burst_creates_per_second"
    assert rate.value == pytest.approx(1 / spacing, rel=0.01)
    assert ratio.name == "e2e_300_plain_burst_vs_limit"
    assert low <= float(ratio.value) <= high, ratio.line()
    # Its bound (results.TARGETS, >= 0.9) fails a client at half speed and passes one at the limit.
    assert verdict(ratio, "min", 0.9) == ("yes (one run)" if spacing == 0.1 else "no (one run)")
