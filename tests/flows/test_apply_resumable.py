"""apply replace by tus: a large file goes through a /v2/init session of type replace, a cut resumes from the
server's offset, a small file stays one request; the other plausible name of replace's video parameter."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.flows.apply_fixtures import upload_requests, uploaded_video, wait_done, write_ops
from tests.flows.helpers import settings_for
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply
from videoferry.state.ledger import Ledger
from videoferry.tasks import lookup

#: The tus chunk of these tests: a 2-second clip is several chunks.
CHUNK = 8 * 1024


def _replace(
    tmp_path: Path, emu: Workspace, video_id: str, source: Path, chunk: int
) -> tuple[int, list[str]]:
    """apply one replace row; the exit status and the statuses of the unit's ops."""
    ops = write_ops(
        tmp_path / "ops.csv", [{"op": "replace", "id": "swap", "target": video_id, "source": str(source)}]
    )
    ledger = tmp_path / "ledger.db"
    opts = ApplyOptions(ops=str(ops), ledger=str(ledger), wait_timeout=120, chunk_size=chunk)
    outcome = run_apply(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    with Ledger.open(ledger, create=False) as book:
        return outcome.exit_code, [o.status for o in book.ops(op_key="swap")]


def test_a_cut_replace_upload_resumes_from_the_servers_offset(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    video_id = uploaded_video(emu, emu_control, clip_factory(1.0, name="first.mp4"))
    version = next(v["version"] for v in emu_control.videos(emu) if v["id"] == video_id)
    longer = clip_factory(2.0, name="longer.mp4")
    size = longer.stat().st_size
    assert size > 3 * CHUNK  # several chunks: the cut is not the last one
    # The first PATCH keeps half its chunk, commits it and drops the connection.
    emu_control.set_faults(
        emu, [{"kind": "truncate_body", "method": "PATCH", "path": "^/upload/", "fraction": 0.5, "times": 1}]
    )
    since = time.time()
    _code, statuses = _replace(tmp_path, emu, video_id, longer, CHUNK)
    assert statuses == ["done"]  # one call, never voided or repeated
    sent = upload_requests(emu_control, emu, since)
    assert [r for r in sent if r["path"] != "endpoint"] == [
        {"method": "POST", "path": "/v2/init", "status": 200, "dropped": False}
    ]  # one session of type replace; no single-request upload, no second session
    patches = [r for r in sent if r["method"] == "PATCH"]
    assert patches[0]["dropped"] is True
    after = patches[1:]
    # The server holds CHUNK // 2 bytes after the cut and accepts a PATCH only at its own offset (409 else):
    # every PATCH after the cut was accepted, and there are exactly as many as the bytes left need, the
    # chunks doubling again from CHUNK after the failed one.
    assert {r["status"] for r in after} == {204}
    left, step, need = size - CHUNK // 2, CHUNK, 0
    while left > 0:
        left, step, need = left - step, 2 * step, need + 1
    assert len(after) == need
    cut = next(i for i, r in enumerate(sent) if r["dropped"])
    # The session was just opened: its first PATCH goes without a HEAD; after the cut, the server is asked.
    assert [r["method"] for r in sent[1 : cut + 1]] == ["PATCH"]
    assert sent[cut + 1]["method"] == "HEAD"  # the server's offset asked for before anything more was sent
    video = next(v for v in wait_done(emu_control, emu) if v["id"] == video_id)
    assert video["md5"] == hashlib.md5(longer.read_bytes()).hexdigest()  # the bytes whole, none twice
    assert video["version"] == version + 1  # replaced once
    assert abs(video["duration"] - 2.0) < 0.15


def test_a_replace_whose_video_cannot_be_read_after_it_is_done_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """The bytes are in (the video's version moved on), then the read of the video that follows fails five
    times: the replace is still done, and the rerun sends nothing (chaos seed 2 of apply replaced twice: the
    failed read was recorded as the call's refusal, and the rerun tried the failed unit again)."""
    video_id = uploaded_video(emu, emu_control, clip_factory(1.0, name="first.mp4"))
    version = next(v["version"] for v in emu_control.videos(emu) if v["id"] == video_id)
    longer = clip_factory(2.0, name="longer.mp4")
    reads = f"^/v1/videos/{video_id}$"
    done = threading.Event()

    def fail_reads_once_replaced() -> None:
        # The client reads one video at most once per 5 s (the spec's poll rule): after its read before the
        # upload, the next waits seconds, long after the last PATCH; the faults go on in between.
        deadline = time.monotonic() + 60
        while not done.is_set() and time.monotonic() < deadline:
            if any(v["id"] == video_id and v["version"] > version for v in emu_control.videos(emu)):
                rule = {"kind": "error", "status": 503, "method": "GET", "path": reads, "times": 5}
                emu_control.set_faults(emu, [rule])
                return
            done.wait(0.02)

    watcher = threading.Thread(target=fail_reads_once_replaced)
    since = time.time()
    watcher.start()
    try:
        _code, statuses = _replace(tmp_path, emu, video_id, longer, CHUNK)
    finally:
        done.set()
        watcher.join()
    log = emu_control.requests(emu.workspace_id, since=since)
    failed = [
        r
        for r in log
        if r["method"] == "GET" and r["path"] == f"/v1/videos/{video_id}" and r["status"] == 503
    ]
    assert len(failed) == 5  # the premise: every attempt of one read failed, after the bytes were in
    assert statuses == ["done"]
    _code, again = _replace(tmp_path, emu, video_id, longer, CHUNK)  # the rerun
    assert again == ["done"]  # the same op, not a second one
    inits = [r for r in emu_control.requests(emu.workspace_id, since=since) if r["path"] == "/v2/init"]
    assert len(inits) == 1
    video = next(v for v in wait_done(emu_control, emu) if v["id"] == video_id)
    assert video["version"] == version + 1  # replaced once


def test_a_small_replace_stays_one_request(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    video_id = uploaded_video(emu, emu_control, clip_factory(1.0, name="first.mp4"))
    longer = clip_factory(2.0, name="longer.mp4")
    since = time.time()
    _code, statuses = _replace(tmp_path, emu, video_id, longer, longer.stat().st_size + 1)
    assert statuses == ["done"]
    sent = upload_requests(emu_control, emu, since)
    assert [(r["method"], r["path"]) for r in sent] == [("POST", "/v2/video")]
    video = next(v for v in wait_done(emu_control, emu) if v["id"] == video_id)
    assert video["md5"] == hashlib.md5(longer.read_bytes()).hexdigest()


@pytest.mark.parametrize("variants", [[], ["init-replace-field"]], ids=["video_id", "replace_video_id"])
def test_replace_session_under_either_name_of_its_video(
    variants: list[str], emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    video_id = uploaded_video(emu, emu_control, clip_factory(1.0, name="first.mp4"))
    emu_control.set_variants(emu, variants)
    data = clip_factory(2.0, name="longer.mp4").read_bytes()
    since = time.time()
    with VideoClient.from_settings(settings_for(emu)) as client:
        session = client.uploads.init_replace(video_id=video_id, filesize=len(data), filename="longer.mp4")
        again = client.uploads.init_replace(video_id=video_id, filesize=len(data), filename="longer.mp4")
    assert str(session.id) == video_id == str(again.id)
    inits = [r["status"] for r in upload_requests(emu_control, emu, since) if r["path"] == "/v2/init"]
    # The other name is learned from one refusal (nothing done) and kept for the client's life.
    assert inits == ([400, 200, 200] if variants else [200, 200])


def test_an_upload_given_up_is_looked_up_then_sent_once_more(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lookup, "SETTLE_SECONDS", 2.0)
    video_id = uploaded_video(emu, emu_control, clip_factory(1.0, name="first.mp4"))
    version = next(v["version"] for v in emu_control.videos(emu) if v["id"] == video_id)
    longer = clip_factory(2.0, name="longer.mp4")
    # Every PATCH of the first session fails until the uploader gives up (5 tries without progress): whether
    # the last byte arrived is unknown, the video is seen unchanged, and the replace is made again, once.
    rules = [{"kind": "error", "status": 503, "method": "PATCH", "path": "^/upload/", "times": 5}]
    emu_control.set_faults(emu, rules)
    since = time.time()
    _code, statuses = _replace(tmp_path, emu, video_id, longer, CHUNK)
    assert statuses == ["void", "done"]
    inits = [r for r in upload_requests(emu_control, emu, since) if r["path"] == "/v2/init"]
    assert len(inits) == 2  # a new session for the second call
    video = next(v for v in wait_done(emu_control, emu) if v["id"] == video_id)
    assert video["md5"] == hashlib.md5(longer.read_bytes()).hexdigest()
    assert video["version"] == version + 1
