"""Dask workers under a remote ledger's lease: nothing is sent once the run's window has closed, and a push
stopped at its end is given again when the lease was renewed, without a byte sent twice."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.flows.test_dask import MIB
from videoferry.connectors.client import VideoClient
from videoferry.connectors.ledger_errors import RemoteLedgerLostError
from videoferry.connectors.sources import LocalFileSource
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.tasks.migrate.byte_plane import DaskBytes

pytestmark = pytest.mark.timeout(300)


@pytest.fixture()
def plane(cluster: Any) -> Iterator[DaskBytes]:
    bytes_plane = DaskBytes.connect(cluster.scheduler_address)
    try:
        yield bytes_plane
    finally:
        bytes_plane.close()


def _session(emu: Workspace, path: Path) -> str:
    """A tus upload address for a new video of the file's size."""
    source = LocalFileSource(path)
    with VideoClient(emu.base_url, emu.upload_url, emu.token) as client:
        session = client.uploads.create_video(
            parent_id=emu.project_id, title="lease", filesize=source.size, filename=source.name
        )
    return session.endpoint


def _upload_calls(control: EmulatorControl, emu: Workspace) -> list[str]:
    return [
        str(r["method"])
        for r in control.requests(emu.workspace_id)
        if r["host"] == "upload" and r["method"] in ("HEAD", "PATCH")
    ]


def _windows(*seconds: float) -> Callable[[], float | None]:
    """A window that is each of `seconds` in turn, then the last for ever."""
    left = list(seconds)

    def window() -> float | None:
        return left.pop(0) if len(left) > 1 else left[0]

    return window


def test_a_worker_sends_nothing_once_the_window_has_closed(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: Any, plane: DaskBytes
) -> None:
    """The window is already over when the worker starts: it asks the offset and sends no PATCH; the
    coordinator's guard then says the lease is lost, and that is what the push raises."""
    path = clip_factory(2.0, width=320, height=240)
    endpoint = _session(emu, path)
    asked: list[int] = []

    def guard() -> None:
        asked.append(1)
        if len(asked) > 1:
            raise RemoteLedgerLostError("the test's lease ended")

    with pytest.raises(RemoteLedgerLostError):
        plane.push(endpoint, str(path), path.stat().st_size, MIB, guard=guard, window=_windows(0.0))
    assert plane.windows_closed == 1
    assert "PATCH" not in _upload_calls(emu_control, emu)


def test_a_push_stopped_at_the_window_is_given_again_once_renewed(
    emu: Workspace, emu_control: EmulatorControl, clip_factory: Any, plane: DaskBytes
) -> None:
    """Closed at the first try, renewed at the second: every byte arrives, each chunk sent once."""
    path = clip_factory(4.0, width=640, height=480)
    size = path.stat().st_size
    endpoint = _session(emu, path)
    offset = plane.push(endpoint, str(path), size, MIB, window=_windows(0.0, 120.0))
    assert offset == size
    assert plane.windows_closed == 1
    calls = _upload_calls(emu_control, emu)
    assert calls.count("PATCH") == math.ceil(size / MIB), calls
