"""Waiting, with a bound and a message, for a file a platform prepares on request (Mux's master, Cloudflare's
MP4 download) to be ready."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from videoferry.connectors.platforms.base import PlatformConfigError, StillProcessing

T = TypeVar("T")


@dataclass(frozen=True)
class Readiness:
    """How a prepared file is waited for: a look every `interval` seconds, at most `bound` seconds."""

    interval: float = 5.0
    bound: float = 1800.0


#: Every five seconds, for at most half an hour.
DEFAULT_READINESS = Readiness()
#: The seconds between looks, and the most seconds one video's file is waited for (else the defaults).
INTERVAL_VARIABLE = "VIDEOFERRY_PREPARE_INTERVAL"
BOUND_VARIABLE = "VIDEOFERRY_PREPARE_BOUND"


def readiness_from_env(env: Mapping[str, str]) -> Readiness:
    """The waiting VIDEOFERRY_PREPARE_INTERVAL / _BOUND set (seconds; PlatformConfigError naming the
    variable and its value when it is not a positive number), else DEFAULT_READINESS's."""
    values: dict[str, float] = {}
    for name, variable in (("interval", INTERVAL_VARIABLE), ("bound", BOUND_VARIABLE)):
        text = env.get(variable, "").strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 < value < float("inf"):
            raise PlatformConfigError(f"{variable}={text[:30]!r}: expected a positive number of seconds")
        values[name] = value
    return Readiness(**values)


def wait_until_ready(look: Callable[[], T | None], readiness: Readiness, what: str) -> T:
    """Call `look` until it gives a value (the file is ready), every `readiness.interval` seconds;
    StillProcessing naming `what` and the bound when it has not within `readiness.bound` seconds (a
    migration fails the item for this run, `source_processing`, and a later run takes it). `look`
    raises PlatformError itself when the platform says the preparation failed."""
    deadline = time.monotonic() + readiness.bound
    looks = 0
    while True:
        looks += 1
        found = look()
        if found is not None:
            return found
        if time.monotonic() >= deadline:
            raise StillProcessing(f"{what} was not ready after {readiness.bound:g} s ({looks} looks)")
        time.sleep(readiness.interval)
