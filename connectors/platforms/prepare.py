"""Waiting, with a bound and a message, for a file a platform prepares on request (Mux's master, Cloudflare's
MP4 download) to be ready."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from connectors.platforms.base import PlatformError

T = TypeVar("T")


@dataclass(frozen=True)
class Readiness:
    """How a prepared file is waited for: a look every `interval` seconds, at most `bound` seconds."""

    interval: float = 5.0
    bound: float = 1800.0


#: Every five seconds, for at most half an hour.
DEFAULT_READINESS = Readiness()


def wait_until_ready(look: Callable[[], T | None], readiness: Readiness, what: str) -> T:
    """Call `look` until it gives a value (the file is ready), every `readiness.interval` seconds;
    PlatformError naming `what` and the bound when it has not within `readiness.bound` seconds. `look`
    raises PlatformError itself when the platform says the preparation failed."""
    deadline = time.monotonic() + readiness.bound
    looks = 0
    while True:
        looks += 1
        found = look()
        if found is not None:
            return found
        if time.monotonic() >= deadline:
            raise PlatformError(
                f"{what} was not ready after {readiness.bound:.0f} s ({looks} looks): run again later"
            )
        time.sleep(readiness.interval)
