"""The send guard against the emulator: every request that may change the service passes it right before it
leaves (after the limiter admitted it), tus PATCHes too; reads do not; what it raises leaves it unsent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.client import VideoClient
from connectors.ledger_errors import RemoteLedgerLostError
from connectors.limiter import ApiRateLimiter
from connectors.sources import LocalFileSource
from connectors.tus import TusUpload
from emulator.control import EmulatorControl, Workspace


class Gate:
    """A guard that counts its calls and refuses once closed (as a lease past its deadline does)."""

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def __call__(self) -> None:
        self.calls += 1
        if self.closed:
            raise RemoteLedgerLostError("ledger s3://b/k: this run could not renew its lease")


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter) as c:
        yield c
    limiter.close()


def test_changes_pass_the_guard_and_are_refused_unsent_reads_do_not(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    gate = Gate()
    client.transport.send_guard = gate
    source = LocalFileSource(sample_clip)
    session = client.uploads.create_video(
        parent_id=emu.project_id, title="t", filesize=source.size, filename="a.mp4"
    )
    assert gate.calls == 1  # the init (POST, upload host)
    with TusUpload.from_transport(client.transport) as tus:
        tus.upload(session.endpoint, source, fresh_filesize=source.size)
    sent = gate.calls
    assert sent >= 2  # and each PATCH
    list(client.videos.iter(project_id=emu.project_id))
    assert gate.calls == sent  # a read passes no guard

    gate.closed = True
    mark = time.time()
    with pytest.raises(RemoteLedgerLostError):
        client.uploads.create_video(
            parent_id=emu.project_id, title="u", filesize=source.size, filename="b.mp4"
        )
    with pytest.raises(RemoteLedgerLostError), TusUpload.from_transport(client.transport) as tus:
        tus.post_whole("http://127.0.0.1:9/never", source)
    changes = [r for r in emu_control.requests(emu.workspace_id, since=mark) if r["method"] != "GET"]
    assert changes == []  # refused before anything left
    assert len(emu_control.videos(emu)) == 1
