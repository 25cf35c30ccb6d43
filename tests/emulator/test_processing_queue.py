"""The processing-queue variant: at most processing_concurrency videos process at once, the others wait their
turn (status processing, progress 0 until it comes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.emulator.conftest import roomy_workspace, upload_single, wait_for
from videoferry.emulator.control import EmulatorControl, Workspace

VIDEOS = 4


def _samples(control: EmulatorControl, ws: Workspace, ids: list[str]) -> list[dict[str, tuple[str, float]]]:
    """(status, progress) of every video, sampled until all are done; each sample is one read of the whole
    workspace (one video read after another could see one video's end and the next one's start together)."""
    samples: list[dict[str, tuple[str, float]]] = []

    def sample() -> bool:
        listed = {v["id"]: v for v in control.videos(ws)}
        seen = {i: (listed[i]["status"], float(listed[i]["progress"])) for i in ids}
        samples.append(seen)
        return all(status == "done" for status, _ in seen.values())

    wait_for(sample, timeout=60.0)
    return samples


@pytest.mark.parametrize(("queued", "mode"), [(True, "timed"), (True, "immediate"), (False, "timed")])
def test_at_most_n_process_at_once(
    emu_control: EmulatorControl, clip_factory: Callable[..., Path], queued: bool, mode: str
) -> None:
    ws: Workspace = roomy_workspace(emu_control)
    # without the queue each video runs its own 3 s timer: several are seen in processing at once
    emu_control.set_processing(ws, mode, seconds=0.3 if queued else 3.0)
    emu_control.set_variants(
        ws, ["processing-queue"] if queued else [], processing_concurrency=1, queue_seconds=0.3
    )
    clip = clip_factory(1.0)
    with httpx.Client(base_url=ws.upload_url, headers=ws.headers, timeout=30) as up:
        ids = [upload_single(up, ws, clip, title=f"v{i}") for i in range(VIDEOS)]
        samples = _samples(emu_control, ws, ids)
    running = [sum(s == "processing" and p > 0 for s, p in seen.values()) for seen in samples]
    waiting = [sum(s == "processing" and p == 0 for s, p in seen.values()) for seen in samples]
    if queued:
        assert max(running) <= 1, running  # one slot: never two in their turn at once
        assert any(r == 1 and w > 0 for r, w in zip(running, waiting, strict=True))  # the others waited
    else:
        assert max(running) > 1, running
