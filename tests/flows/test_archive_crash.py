"""kill -9 of `videoferry archive` during a multipart upload, then a rerun; and archive_flow on Prefect."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.flows.helpers import cli_env
from tests.flows.test_archive import broadcast_world, objects, s3, stored
from videoferry.emulator.control import EmulatorControl, Workspace

#: `python -m videoferry.flows.cli` runs the module as __main__, whose app never gets the jobs' commands (they
#: register on flows.cli.app): run the console script's entry point instead.
ENTRY = [sys.executable, "-c", "from videoferry.flows.cli import main; main()"]


def run_cli(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ENTRY, *args], env=env, capture_output=True, text=True, timeout=timeout)


def _uploads(bucket: str) -> list[dict[str, object]]:
    return list(s3().list_multipart_uploads(Bucket=bucket).get("Uploads", []))


def test_kill_9_during_a_multipart_upload_then_rerun_completes_every_object_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_bucket: str
) -> None:
    world = broadcast_world(emu_control, emu, {"Nightly": 2, "Special": 1}, chat=2)
    ledger = tmp_path / "ledger.db"
    args = [
        "archive",
        "--to",
        f"s3://{s3_bucket}/night/",
        "--project",
        emu.project_id,
        "--ledger",
        str(ledger),
        "--delete-after-archive",
        "--transfers",
        "1",
        "--no-prefect",
    ]
    # Downloads start only after a while: the kill lands while a multipart upload is open.
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 3000, "path": "^/media/"}])
    proc = subprocess.Popen([*ENTRY, *args], env=cli_env(emu), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _uploads(s3_bucket) and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    assert _uploads(s3_bucket), "no multipart upload was open"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    truth = stored(emu_control, emu)
    files = objects(s3_bucket)
    for event_id, pairs in world.streams.items():  # nothing deleted before its archive was complete
        for stream_id, video_id in pairs:
            if video_id not in truth:
                assert f"night/{event_id}/{stream_id}/{video_id}.mp4" in files

    emu_control.clear_faults(emu)
    rerun = run_cli(args, cli_env(emu), timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert _uploads(s3_bucket) == []  # the killed run's upload was aborted, its parts gone
    files = objects(s3_bucket)
    for event_id, pairs in world.streams.items():
        for stream_id, video_id in pairs:
            body = files[f"night/{event_id}/{stream_id}/{video_id}.mp4"]
            assert hashlib.md5(body).hexdigest() == truth[video_id]["md5"]
            assert len(body) == truth[video_id]["file_size"]
    assert not set(world.videos) & set(stored(emu_control, emu))  # deleted once archived
    assert emu.token not in rerun.stdout + rerun.stderr
    assert "sig=" not in rerun.stdout + rerun.stderr


@pytest.mark.flow
def test_archive_flow_on_prefect_and_the_cli_dry_run(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from videoferry.flows.archive.flow import archive_flow

    world = broadcast_world(emu_control, emu, {"Flow show": 1})
    dry = run_cli(
        [
            "archive",
            "--to",
            str(tmp_path / "d"),
            "--event-ids",
            ",".join(world.streams),
            "--dry-run",
            "--ledger",
            str(tmp_path / "l.db"),
        ],
        cli_env(emu),
    )
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("copy ") and not (tmp_path / "d").exists()
    both = run_cli(
        ["archive", "--to", str(tmp_path / "d"), "--event-ids", "a", "--project-id", "b"], cli_env(emu)
    )
    assert both.returncode == 2 and "either --event-ids ID,ID or --project-id ID" in both.stderr
    broken = run_cli(
        [
            "archive",
            "--to",
            str(tmp_path / "d"),
            "--event-ids",
            ",".join(world.streams),
            "--no-prefect",
            "--ledger",
            str(tmp_path / "broken.db"),
        ],
        cli_env(emu, VIDEOFERRY_TOKEN="not-a-token"),
    )
    assert broken.returncode == 2 and "not-a-token" not in broken.stdout + broken.stderr
    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    state = archive_flow(
        to=str(tmp_path / "d"),
        events=list(world.streams),
        ledger=str(tmp_path / "l.db"),
        api_url=emu.base_url,
        upload_url=emu.upload_url,
        return_state=True,
    )
    assert state.is_completed()
    result = state.result()
    assert isinstance(result, dict) and result["counts"] == {"archived": 1}
    (event_id, [(stream_id, video_id)]) = next(iter(world.streams.items()))
    assert (tmp_path / "d" / event_id / stream_id / f"{video_id}.mp4").stat().st_size > 0


def test_a_copy_completed_just_before_a_crash_is_adopted_not_copied_again(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_bucket: str
) -> None:
    from tests.flows.test_archive import FAST, settings_for
    from videoferry.flows.archive.options import ArchiveOptions
    from videoferry.flows.archive.runner import run_archive
    from videoferry.state.ledger import Ledger

    world = broadcast_world(emu_control, emu, {"Adopt": 1})
    (event_id, [(stream_id, video_id)]) = next(iter(world.streams.items()))
    to = f"s3://{s3_bucket}/a/"
    first = ArchiveOptions(to=to, events=[event_id], ledger=str(tmp_path / "first.db"))
    assert run_archive(first, settings_for(emu, **FAST)).counts == {"archived": 1}
    with Ledger.open(tmp_path / "first.db") as ledger:
        (done,) = ledger.ops(op_key=f"archive:{video_id}:copy")
    # The ledger a run killed right after completing the upload leaves: the intent, no outcome.
    with Ledger.open(tmp_path / "crashed.db") as ledger:
        run_id = ledger.start_run("archive")
        ledger.record_op_intent(
            f"archive:{video_id}",
            "archive",
            dict(done.params),
            run_id=run_id,
            op_key=f"archive:{video_id}:copy",
            video_id=video_id,
        )
    started = time.time()
    again = ArchiveOptions(to=to, events=[event_id], ledger=str(tmp_path / "crashed.db"))
    outcome = run_archive(again, settings_for(emu, **FAST))
    assert outcome.exit_code == 0 and outcome.counts == {"archived": 1}
    assert not [
        r for r in emu_control.requests(emu.workspace_id, since=started) if r["path"].startswith("/media/")
    ]
    with Ledger.open(tmp_path / "crashed.db") as ledger:
        ops = ledger.ops(op_key=f"archive:{video_id}:copy")
    assert [op.status for op in ops] == ["done"] and ops[0].result["adopted"] is True
    body = objects(s3_bucket)[f"a/{event_id}/{stream_id}/{video_id}.mp4"]
    assert hashlib.md5(body).hexdigest() == stored(emu_control, emu)[video_id]["md5"]
