"""`videoferry migrate` end to end: the wait bound, --wait-timeout 0, --retry-errors (plain and Prefect)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.flows.helpers import cli_argv, cli_env, clip_rows, creates, run_cli, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace

STOPPED = "stopped waiting for processing after 1 s (--wait-timeout); rerun to keep waiting"


def _args(inventory: Path, ws: Workspace, ledger: Path, *extra: str) -> list[str]:
    return ["migrate", str(inventory), "--parent-id", ws.project_id, "--ledger", str(ledger), *extra]


def _list_calls(control: EmulatorControl, ws: Workspace) -> int:
    return sum(
        1 for r in control.requests(ws.workspace_id) if r["method"] == "GET" and r["path"] == "/v1/videos"
    )


def test_the_wait_bound_is_named_and_a_rerun_keeps_waiting(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    emu_control.set_processing(emu, "manual")  # the service leaves the video in processing
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    args = _args(inventory, emu, tmp_path / "l.db", "--no-prefect", "--wait-timeout", "1")
    first = run_cli(args, cli_env(emu), timeout=240)
    assert first.returncode == 1, first.stdout + first.stderr
    assert STOPPED in first.stdout.splitlines()
    assert "not done: 1 processing" in first.stdout
    (video,) = emu_control.videos(emu)

    emu_control.set_video_status(emu, video["id"], "done")
    second = run_cli(args, cli_env(emu), timeout=240)
    assert second.returncode == 0, second.stdout + second.stderr
    assert STOPPED not in second.stdout
    assert len(creates(emu_control, emu)) == 1  # the rerun waited on; nothing was sent again


def test_wait_timeout_zero_means_no_bound(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    emu_control.set_processing(emu, "manual")
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    args = _args(inventory, emu, tmp_path / "l.db", "--no-prefect", "--wait-timeout", "0")
    proc = subprocess.Popen(
        cli_argv(*args), env=cli_env(emu), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # Preflight and two status polls (a poll rule apart): a zero-second bound would have stopped
        # after the first poll that found the video still processing.
        deadline = time.monotonic() + 120
        while _list_calls(emu_control, emu) < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not poll twice"
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        (video,) = emu_control.videos(emu)
        assert video["status"] == "processing"
        emu_control.set_video_status(emu, video["id"], "done")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    assert "ok: every item is done" in out


@pytest.mark.flow
def test_retry_errors_reruns_items_the_service_failed(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    emu_control.set_processing(emu, "manual")
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    ledger = tmp_path / "l.db"
    first = run_cli(_args(inventory, emu, ledger, "--no-prefect", "--wait-timeout", "1"), cli_env(emu))
    assert first.returncode == 1, first.stdout + first.stderr
    (failed,) = emu_control.videos(emu)
    emu_control.set_video_status(emu, failed["id"], "error", "transcoder crashed")
    emu_control.set_processing(emu, "immediate")

    plain = run_cli(_args(inventory, emu, ledger, "--no-prefect", "--wait-timeout", "5"), cli_env(emu))
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert "not done: 1 error" in plain.stdout
    assert len(creates(emu_control, emu)) == 1  # a service-side failure is not retried by default

    # Through Prefect (the default path): the option reaches the flow as its retry_errors parameter.
    env = cli_env(emu, PREFECT_HOME=str(tmp_path / "prefect-home"))
    env.pop("PREFECT_API_URL", None)
    retried = run_cli(_args(inventory, emu, ledger, "--retry-errors"), env, timeout=300)
    assert retried.returncode == 0, (retried.stdout + retried.stderr)[-3000:]
    assert len(creates(emu_control, emu)) == 2
    status = run_cli(["status", "--ledger", str(ledger), "--json"], cli_env())
    counts = json.loads(status.stdout)["counts"]
    assert {state: n for state, n in counts.items() if n} == {"finished": 1}
    done = [v for v in emu_control.videos(emu) if v["status"] == "done"]
    assert [v["id"] for v in done] != [failed["id"]] and len(done) == 1
