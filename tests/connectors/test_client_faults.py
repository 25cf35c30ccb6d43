"""Retries, unknown outcomes, the 429 pause and the rate limit, driven by the emulator's fault rules."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.connectors.waiting import wait_terminal
from videoferry.connectors import errors as E
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.connectors.sources import LocalFileSource
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=5, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST) as c:
        yield c
    limiter.close()


def log_of(
    control: EmulatorControl, ws: Workspace, path: str | None = None, method: str | None = None
) -> list[dict]:
    rows = [r for r in control.requests(ws.workspace_id) if not r["path"].startswith("/_emulator")]
    return [
        r for r in rows if (path is None or r["path"] == path) and (method is None or r["method"] == method)
    ]


def max_in_window(stamps: list[float], window: float) -> int:
    stamps = sorted(stamps)
    best = j = 0
    for i, start in enumerate(stamps):
        while j < len(stamps) and stamps[j] < start + window:
            j += 1
        best = max(best, j - i)
    return best


def a_video(client: VideoClient, emu: Workspace, clip: Path) -> str:
    video_id = client.uploads.single(parent_id=emu.project_id, title="v", source=LocalFileSource(clip)).id
    assert wait_terminal(client, video_id).status == "done"  # cut and concat need a processed video
    return video_id


def test_idempotent_calls_are_retried_through_5xx(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video_id = a_video(client, emu, sample_clip)
    earlier = len(log_of(emu_control, emu, method="GET"))  # a_video polled until done
    emu_control.set_faults(emu, [{"kind": "error", "status": 503, "method": "GET", "times": 2}])
    assert client.videos.get(video_id).id == video_id
    gets = log_of(emu_control, emu, method="GET")[earlier:]
    assert [r["status"] for r in gets] == [503, 503, 200]
    emu_control.set_faults(emu, [{"kind": "error", "status": 502, "method": "PATCH"}])
    with pytest.raises(E.ServerError) as info:
        client.videos.update(video_id, title="never")
    assert info.value.status == 502 and info.value.retryable
    assert len(log_of(emu_control, emu, method="PATCH")) == 5  # at most five attempts


def test_init_dropped_after_commit_is_unknown_not_repeated(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "^/v2/init$", "times": 1}])
    with pytest.raises(E.UnknownOutcomeError) as info:
        client.uploads.create_video(parent_id=emu.project_id, title="maybe", filesize=1000)
    err = info.value
    assert err.cause_kind == "connection" and err.operation == "init_upload" and not err.retryable
    assert len(log_of(emu_control, emu, path="/v2/init")) == 1
    # It was created once: the ledger would find it by listing project + title.
    assert [v["title"] for v in emu_control.videos(emu)] == ["maybe"]
    assert [v.title for v in client.videos.list(project_id=emu.project_id, title="maybe").items] == ["maybe"]


@pytest.mark.parametrize("status", [500, 503])
def test_creates_with_5xx_raise_unknown_outcome_with_request_id(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path, status: int
) -> None:
    video_id = a_video(client, emu, sample_clip)
    emu_control.set_faults(emu, [{"kind": "error", "status": status, "method": "POST"}])
    for call in (
        lambda: client.uploads.create_video(parent_id=emu.project_id, title="t", filesize=10),
        lambda: client.videos.copy(video_id),
        lambda: client.videos.concat(video_id, append=[video_id]),
        lambda: client.videos.cut(video_id, trim=[(0, 1)]),
        lambda: client.uploads.single(parent_id=emu.project_id, title="t", source=b"abc"),
        lambda: client.uploads.import_url(
            parent_id=emu.project_id, title="t", url="http://127.0.0.1:9/x.mp4"
        ),
    ):
        with pytest.raises(E.UnknownOutcomeError) as info:
            call()
        assert info.value.status == status and info.value.cause_kind == "server_error"
        assert info.value.request_id  # the emulator sends X-Request-ID on 500 answers
        assert emu.token not in str(info.value)
    posts = log_of(emu_control, emu, method="POST")
    assert len([r for r in posts if r["status"] == status]) == 6  # each create was tried exactly once


def test_cut_with_lost_answer_is_unknown_and_move_is_retried(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video_id = a_video(client, emu, sample_clip)
    before = client.videos.get(video_id)
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "/cut$", "times": 1}])
    with pytest.raises(E.UnknownOutcomeError):
        client.videos.cut(video_id, trim=[(0.5, 1.0)])
    after = client.videos.get(video_id)
    assert after.version != before.version  # it was applied once: the caller sees it by version
    assert len(log_of(emu_control, emu, path=f"/v1/videos/{video_id}/cut")) == 1
    project_id, folder_id = emu_control.create_project(emu)
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "/move$", "times": 1}])
    moved = client.videos.move(video_id, project_id, folder_id)
    assert moved.project_id == project_id
    assert len(log_of(emu_control, emu, path=f"/v1/videos/{video_id}/move")) == 2


def test_connect_errors_are_retried_even_for_creates() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    limiter = ApiRateLimiter.memory(1000, 10_000)
    url = f"http://127.0.0.1:{port}"
    with VideoClient(url, url, "t", limiter=limiter, retry=FAST) as dead:
        with pytest.raises(E.TransportError) as info:
            dead.uploads.create_video(parent_id="p", title="t", filesize=1)
    assert not info.value.sent and info.value.retryable
    assert not isinstance(info.value, E.UnknownOutcomeError)
    assert limiter.stats.acquired == 5  # five attempts, each through the limiter
    limiter.close()


def test_429_pauses_every_caller_then_retries(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_faults(emu, [{"kind": "rate_limit", "method": "GET", "path": "^/v1/videos$", "times": 1}])
    others: list[float] = []

    def other_caller() -> None:
        client.transport.limiter.acquire()  # any other thread's next API call waits for the pause too

        others.append(time.time())

    page = client.videos.list()
    assert page.items == []
    rows = log_of(emu_control, emu, path="/v1/videos")
    assert [r["status"] for r in rows] == [429, 200]
    assert rows[1]["time"] - rows[0]["time"] >= 5.0
    assert client.transport.limiter.stats.pauses == 1
    # A 429 create is known not to have happened, so it is repeated after the pause.
    emu_control.set_faults(emu, [{"kind": "rate_limit", "path": "^/v2/init$", "times": 1}])
    thread = threading.Thread(target=other_caller)
    session_holder: list[str] = []

    def create() -> None:
        session_holder.append(
            client.uploads.create_video(parent_id=emu.project_id, title="after 429", filesize=5).id
        )

    creator = threading.Thread(target=create)
    creator.start()
    # Start the other caller once the 429 has been seen (poll with a bound).

    deadline = time.monotonic() + 10
    while client.transport.limiter.stats.pauses < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.start()
    creator.join(timeout=30)
    thread.join(timeout=30)
    inits = log_of(emu_control, emu, path="/v2/init")
    assert [r["status"] for r in inits] == [429, 200] and len(session_holder) == 1
    assert others and others[0] >= inits[0]["time"] + 5.0


def test_rate_limit_is_never_exceeded_under_load(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    def worker() -> None:
        for _ in range(4):
            client.videos.list(per_page=1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    rows = log_of(emu_control, emu, path="/v1/videos")
    assert len(rows) == 32
    assert all(r["status"] == 200 for r in rows)  # no 429: the server never saw more than 10 in a second
    assert max_in_window([r["time"] for r in rows], 1.0) <= 10
    assert client.transport.limiter.stats.pauses == 0


def test_tus_bytes_do_not_pass_the_api_limiter(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    from videoferry.connectors.tus import TusUpload

    source = LocalFileSource(sample_clip)
    session = client.uploads.create_video(parent_id=emu.project_id, title="t", filesize=source.size)
    acquired = client.transport.limiter.stats.acquired
    with TusUpload(chunk_size=16 * 1024) as tus:
        tus.upload(session.endpoint, source)
    assert client.transport.limiter.stats.acquired == acquired
    endpoint_rows = [r for r in log_of(emu_control, emu) if r["method"] in ("HEAD", "PATCH")]
    assert len(endpoint_rows) > 3 and not any(r["api"] for r in endpoint_rows)


def test_timeout_after_sending(emu: Workspace, emu_control: EmulatorControl) -> None:
    limiter = ApiRateLimiter.memory()
    with VideoClient(
        emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST, timeout=0.5
    ) as slow:
        emu_control.set_faults(emu, [{"kind": "latency", "ms": 1500, "path": "^/v2/init$", "times": 1}])
        with pytest.raises(E.UnknownOutcomeError) as info:
            slow.uploads.create_video(parent_id=emu.project_id, title="slow", filesize=10)
        assert info.value.cause_kind == "timeout"
        emu_control.set_faults(emu, [{"kind": "latency", "ms": 1500, "method": "GET", "times": 1}])
        assert slow.videos.list(project_id=emu.project_id).pagination.total is not None  # retried
    limiter.close()
    deadline = time.monotonic() + 10  # the slow requests finish on the server after the client gave up
    while len(log_of(emu_control, emu, path="/v1/videos")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(log_of(emu_control, emu, path="/v2/init")) == 1
    assert len(log_of(emu_control, emu, path="/v1/videos")) == 2
    # Either outcome is possible after a timeout (here the emulator dropped the request when the client
    # went away); what matters is that it was never sent twice.
    assert len(emu_control.videos(emu)) <= 1


def test_a_change_times_out_within_the_send_window_and_a_read_does_not(
    emu: Workspace, emu_control: EmulatorControl
) -> None:
    """A remote ledger's lease leaves 0.4 s: a create answered later is given up within them (its answer lost
    before another run may take the ledger); a read keeps its own timeout."""
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST, timeout=10.0) as c:
        c.transport.send_window = lambda: 0.4
        # Answered in 1.5 s, well within the client's 10 s: only the window's cut makes it time out.
        emu_control.set_faults(emu, [{"kind": "latency", "ms": 1500, "path": "^/v2/init$", "times": 1}])
        with pytest.raises(E.UnknownOutcomeError) as info:
            c.uploads.create_video(parent_id=emu.project_id, title="late", filesize=10)
        assert info.value.cause_kind == "timeout"
        emu_control.set_faults(emu, [{"kind": "latency", "ms": 1000, "method": "GET", "times": 1}])
        assert c.videos.list(project_id=emu.project_id).pagination.total is not None  # waited past 0.4 s
    limiter.close()
    assert len(log_of(emu_control, emu, path="/v1/videos")) == 1  # answered the first time


def test_client_from_settings_with_sqlite_limiter(emu: Workspace, tmp_path: Path) -> None:
    from videoferry.connectors.config import Settings

    settings = Settings(
        api_url=emu.base_url,
        upload_url=emu.upload_url,
        token=emu.token,
        limiter_url=f"sqlite://{tmp_path / 'limiter.db'}",
    )
    with VideoClient.from_settings(settings) as c:
        assert c.transport.limiter.backend == "sqlite"
        assert c.videos.list().items == []
        assert c.transport.limiter.stats.acquired == 1
        c.transport.limiter.close()
    assert emu.token not in repr(settings)
