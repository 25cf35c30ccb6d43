"""Fixtures of the flow tests."""

import pytest

from tests.fixtures.emulator import fast_polls
from tests.flows.apply_fixtures import library  # noqa: F401 - a fixture, found by pytest here
from tests.flows.dask_fixtures import cluster  # noqa: F401 - a fixture, found by pytest here
from tests.flows.frozen_s3 import frozen_s3  # noqa: F401 - a fixture, found by pytest here
from videoferry.emulator.control import EmulatorControl, Workspace


@pytest.fixture()
def emu(emu_control: EmulatorControl) -> Workspace:
    """A fresh isolated workspace whose runs poll fast (tests/fixtures/emulator.fast_polls): the spec's 5 s
    where a test says so (emu_control.set_poll_rule(emu, 5))."""
    return fast_polls(emu_control)
