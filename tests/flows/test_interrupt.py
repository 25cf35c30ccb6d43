"""Ctrl-C as a person's terminal sends it (SIGINT to the command's process group): every job path stops within
seconds with exit status 130, no traceback, one line that names the run and says a rerun resumes; a second
Ctrl-C stops at once; the rerun finishes what was interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.flows.helpers import cli_argv, cli_env, clip_rows, run_cli, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger

#: How long a stopped command may take to be gone. Not a speed figure: after Ctrl-C a run has
#: flows.interrupts.STOP_GRACE_SECONDS (10 s) to stop its workers before the process ends at once, so a
#: command still there after 30 s (room for a loaded 2-core machine) is one that does not stop; before this
#: was fixed the Prefect path took 76-141 s.
GONE_WITHIN = 30.0
#: The most time a run may take to get some item into processing (a Prefect server starts first).
STARTED_WITHIN = 180.0


def _states(ledger: Path) -> dict[str, str]:
    if not ledger.exists():
        return {}
    try:
        book = Ledger.open(ledger, create=False)
    except Exception:  # the run is still creating its tables
        return {}
    try:
        return {item.key: item.state for item in book.items()}
    finally:
        book.close()


def _start(args: list[str], ws: Workspace, tmp: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """The command in a process group of its own (as a shell runs it), its output in files."""
    out, err = tmp / "stdout.txt", tmp / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            cli_argv(*args), env=cli_env(ws), stdout=stdout, stderr=stderr, start_new_session=True
        )
    return proc, out, err


def _wait_until(predicate: object, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not {what} within {within:g} s"
        time.sleep(0.2)


def _gone(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(timeout=GONE_WITHIN)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"the command was still running {GONE_WITHIN:g} s after Ctrl-C")


@pytest.mark.parametrize("path", ["--prefect", "--no-prefect"])
def test_ctrl_c_stops_a_migration_with_one_line_and_a_rerun_resumes(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: object, path: str
) -> None:
    emu_control.set_processing(emu, "manual")  # the service keeps every video processing: the run waits
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 4))  # type: ignore[arg-type]
    ledger = tmp_path / "ledger.db"
    args = ["migrate", str(inventory), path, "--parent-id", emu.project_id, "--ledger", str(ledger)]
    proc, out, err = _start(args, emu, tmp_path)
    _wait_until(lambda: "processing" in _states(ledger).values(), STARTED_WITHIN, "processing")
    children = psutil.Process(proc.pid).children(recursive=True)
    server = [p for p in children if "uvicorn" in " ".join(p.cmdline())]
    assert bool(server) == (path == "--prefect")  # the temporary Prefect server the flow run reports to

    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    code = _gone(proc)

    stdout, stderr = out.read_text(), err.read_text()
    assert code == 130, stdout + stderr
    assert "Traceback" not in stdout + stderr and "Crash detected" not in stderr, stderr
    said = [line for line in stderr.splitlines() if line.startswith("interrupted")]
    run = Ledger.open(ledger, create=False)
    try:
        (last,) = run.runs()
    finally:
        run.close()
    assert said == [
        f"interrupted: the migrate run {last.run_id} stopped (0 of 4 items complete); rerun the same command"
        " to resume where it stopped"
    ]
    assert last.status == "interrupted"
    psutil.wait_procs(server, timeout=10)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in server)

    # The rerun sends nothing again: it waits for the videos the interrupted run uploaded.
    emu_control.set_processing(emu, "immediate")
    for video in emu_control.videos(emu):
        emu_control.set_video_status(emu, video["id"], "done")
    rerun = run_cli([args[0], args[1], "--no-prefect", *args[3:]], cli_env(emu))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert len(emu_control.videos(emu)) == 4


def test_a_second_ctrl_c_stops_at_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: object
) -> None:
    # Every tus PATCH takes 60 s to be answered: after the first Ctrl-C the transfers cannot end soon.
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 60_000, "method": "PATCH"}])
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2))  # type: ignore[arg-type]
    ledger = tmp_path / "ledger.db"
    args = ["migrate", str(inventory), "--parent-id", emu.project_id, "--ledger", str(ledger)]
    proc, out, err = _start(args, emu, tmp_path)

    def patch_held() -> bool:  # a PATCH the service holds: the first Ctrl-C's stop cannot end before it does
        return any(r["method"] == "PATCH" for r in emu_control.requests(emu.workspace_id, open_now=True))

    _wait_until(patch_held, STARTED_WITHIN, "sending bytes")

    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.5)  # not a wait for state: the two presses of a person, one after the other
    os.killpg(proc.pid, signal.SIGINT)
    code = _gone(proc)

    stderr = err.read_text()
    assert code == 130, out.read_text() + stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        "interrupted (a second Ctrl-C): stopped at once; a rerun settles what was in flight"
    )
