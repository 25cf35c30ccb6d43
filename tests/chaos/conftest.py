"""Chaos fixtures: the emulator in its own process (like the real service), a fresh workspace per test.

In the test process the emulator would share the GIL with the migration under test: its event loop would then
stamp arrivals late whenever the client's threads hold the interpreter, which no real service does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from videoferry.emulator.control import EmulatorControl, Workspace


@pytest.fixture(scope="session")
def chaos_control() -> Iterator[EmulatorControl]:
    """`python -m videoferry.emulator` on free loopback ports for the session, and its control client."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "videoferry.emulator", "--port", "0", "--upload-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once both hosts accept connections
        assert first, "the emulator process ended before it printed its workspace"
        control = EmulatorControl(json.loads(first)["base_url"])
        try:
            yield control
        finally:
            control.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


#: The poll rule of the chaos workspaces (seconds; the spec's is 5): runs list statuses that often.
CHAOS_POLL_RULE = 0.5


@pytest.fixture()
def chaos_ws(chaos_control: EmulatorControl) -> Workspace:
    """A fresh workspace with the service's published limits (10/s, 300/min), immediate processing and a
    poll rule of CHAOS_POLL_RULE s, lowered through the control API (no option of a job goes below 5 s)."""
    return chaos_control.create_workspace(
        rate_per_second=10, rate_per_minute=300, poll_rule_seconds=CHAOS_POLL_RULE
    )
