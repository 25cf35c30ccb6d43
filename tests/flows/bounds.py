"""The bound a test run may not outlive: a run that waits or loops without end fails its test, it never hangs.

RUN_BOUND_SECONDS is stated for the migrations the tests make (a dozen or two small clips, some create answers
lost, under any variant bundle): each ends well under a minute. The product's own bounds are larger and say
what they waited for (docs/how-a-migration-runs.md, "Every wait has a bound"); this one catches a run that
would only end on them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

#: No test migration (run or rerun) may outlive this.
RUN_BOUND_SECONDS = 60.0


def within(run: Callable[[], T], seconds: float = RUN_BOUND_SECONDS, what: str = "the run") -> T:
    """run() in a thread; its result (or its exception), or the test fails once it outlives `seconds`."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = run()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="bounded-run", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{what} was still going after {seconds:g} s (its stated bound)")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
