"""A service that hangs (it accepts connections and never answers: the emulator's process stopped with
SIGSTOP): every job ends with exit status 1 once the service has answered nothing for its bound
(VIDEOFERRY_OUTAGE_SECONDS), each call's timeout drawn from what is left of it, however long the call's own
timeout (VIDEOFERRY_TIMEOUT) is."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.flows.helpers import cli_argv, cli_env, clip_rows, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace

#: The bound the runs are given (seconds).
BOUND = 3
#: Each call's own timeout: before, a hanging call was waited on this long per attempt (5 attempts).
CALL_TIMEOUT = 600
#: Not a speed figure: a run not ended this long after the service froze waited on a call's own timeout
#: (CALL_TIMEOUT) rather than on its bound.
ENDED_WITHIN = 120.0
#: How long a run may take to get where the service is frozen under it.
STARTED_WITHIN = 60.0


@pytest.fixture()
def emulator_process() -> Iterator[tuple[subprocess.Popen[str], EmulatorControl]]:
    """`python -m videoferry.emulator` in its own process (it can be frozen), and its control client; thawed
    and ended at the end."""
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
            yield proc, control
        finally:
            control.close()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _poll_until(done: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:g} s"
        time.sleep(0.1)


def _runs(ledger: Path) -> list[tuple[str, str, str | None]]:
    """(status, started_at, finished_at) of the ledger's runs; [] while it has none."""
    if not ledger.exists():
        return []
    try:
        with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=1) as db:
            return list(db.execute("SELECT status, started_at, finished_at FROM runs ORDER BY started_at"))
    except sqlite3.Error:  # the run is still creating its tables
        return []


def _states(ledger: Path) -> list[str]:
    if not ledger.exists():
        return []
    try:
        with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=1) as db:
            return [row[0] for row in db.execute("SELECT state FROM items")]
    except sqlite3.Error:
        return []


def _run_frozen(
    args: list[str],
    ws: Workspace,
    emulator: subprocess.Popen[str],
    ledger: Path,
    tmp: Path,
    ready: Callable[[], bool] | None,
) -> tuple[int, str]:
    """Start `videoferry ARGS`, freeze the service once ready() (the run is under way; None: never, the
    workspace's faults hang what they hang), and wait for the run to end; (exit status, what it said)."""
    env = cli_env(ws, VIDEOFERRY_OUTAGE_SECONDS=str(BOUND), VIDEOFERRY_TIMEOUT=str(CALL_TIMEOUT))
    out, err = tmp / "out.txt", tmp / "err.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(cli_argv(*args), env=env, stdout=stdout, stderr=stderr, cwd=tmp)
    try:
        if ready is not None:
            _poll_until(lambda: ready() or proc.poll() is not None, STARTED_WITHIN, "the run under way")
            assert proc.poll() is None, out.read_text() + err.read_text()
            os.kill(emulator.pid, signal.SIGSTOP)  # it accepts connections (the kernel does), never answers
        try:
            code = proc.wait(timeout=ENDED_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run still waited on a frozen service {ENDED_WITHIN:g} s after it froze")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, out.read_text() + err.read_text()


def _assert_bounded(code: int, said: str, ws: Workspace, ledger: Path, url: str | None = None) -> None:
    """Exit status 1, the bound named, no call waited on its own timeout, and the run's own times say it
    ended before a single such wait could have; the host that did not answer (`url`'s, default the API's)."""
    host = urlsplit(url or ws.base_url).netloc
    assert code == 1, said
    assert "Traceback" not in said, said
    assert "the service has not answered for" in said, said
    assert f"its bound VIDEOFERRY_OUTAGE_SECONDS being {BOUND} s" in said, said
    assert f"within {CALL_TIMEOUT} s" not in said, said  # no attempt was given the call's own timeout
    assert host in said, said  # the host that did not answer is named
    runs = _runs(ledger)
    assert runs and runs[-1][0] == "incomplete", runs
    started, finished = (datetime.fromisoformat(at) for at in runs[-1][1:] if at is not None)
    assert (finished - started).total_seconds() < CALL_TIMEOUT, runs  # shorter than one attempt before


def test_a_migration_whose_service_freezes_mid_run_stops_within_its_bound_and_the_rerun_is_clean(
    tmp_path: Path, clip_factory: object, emulator_process: tuple[subprocess.Popen[str], EmulatorControl]
) -> None:
    """The issue's own case: the items processing (the run polls), then the service freezes."""
    emulator, control = emulator_process
    ws = control.create_workspace()
    control.set_processing(ws, "manual")  # the videos stay processing: the run polls the service
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3))  # type: ignore[arg-type]
    ledger = tmp_path / "ledger.db"
    args = ["migrate", str(inventory), "--no-prefect", "--parent-id", ws.project_id, "--ledger", str(ledger)]
    code, said = _run_frozen(
        args, ws, emulator, ledger, tmp_path, lambda: _states(ledger).count("processing") == 3
    )
    _assert_bounded(code, said, ws, ledger)
    for name in ("clip-0.mp4", "clip-1.mp4", "clip-2.mp4"):  # what is not done is named, and the rerun
        assert any(name in line and "rerun" in line for line in said.splitlines()), said

    os.kill(emulator.pid, signal.SIGCONT)
    for video in control.videos(ws):
        control.set_video_status(ws, video["id"], "done")
    rerun = subprocess.run(cli_argv(*args), env=cli_env(ws), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert len(control.videos(ws)) == 3  # no duplicate


def _ops(tmp: Path, ws: Workspace) -> list[str]:
    ops = tmp / "ops.csv"
    # Any video id: the calls hang before the service could say it has no such video.
    ops.write_text(f"op,id,target,title\nupdate,u1,{ws.project_id},Renamed\n", encoding="utf-8")
    return ["apply", str(ops)]


def _setup(tmp: Path, ws: Workspace) -> list[str]:
    file = tmp / "site.yaml"
    file.write_text(f"parent_id: {ws.project_id}\nprivacy_domains: [hang.example.com]\n", encoding="utf-8")
    return ["setup", "up", str(file)]


def _check(tmp: Path, ws: Workspace) -> list[str]:
    inventory = tmp / "check.csv"
    inventory.write_text("source,title\nclip.mp4,A clip\n", encoding="utf-8")
    return ["check", str(inventory), "--parent-id", ws.project_id, "--adopt"]  # a run: frozen once it began


#: job -> its command line (the ledger added) against a workspace.
JOBS: dict[str, Callable[[Path, Workspace], list[str]]] = {
    "apply": _ops,
    "archive": lambda tmp, ws: ["archive", "--to", str(tmp / "a"), "--project", ws.project_id],
    "backup": lambda tmp, ws: ["backup", "--project", ws.project_id, "--to", str(tmp / "b")],
    "setup": _setup,
    "check": _check,
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_job_stops_within_its_bound_when_the_service_hangs(
    job: str, tmp_path: Path, emulator_process: tuple[subprocess.Popen[str], EmulatorControl]
) -> None:
    """Every call of the workspace hangs (a latency fault of an hour: the run cannot end before the freeze),
    then the whole service freezes once the run has started (past the check that the addresses answer)."""
    emulator, control = emulator_process
    ws = control.create_workspace()
    control.set_faults(ws, [{"kind": "latency", "ms": 3_600_000}])
    ledger = tmp_path / "ledger.db"
    args = [*JOBS[job](tmp_path, ws), "--ledger", str(ledger)]
    if job in ("apply", "archive", "backup"):
        args.append("--no-prefect")
    code, said = _run_frozen(args, ws, emulator, ledger, tmp_path, lambda: bool(_runs(ledger)))
    _assert_bounded(code, said, ws, ledger)


def test_an_upload_address_that_hangs_is_bounded_too(
    tmp_path: Path, clip_factory: object, emulator_process: tuple[subprocess.Popen[str], EmulatorControl]
) -> None:
    """The API answers; only the tus address accepts the PATCH and never answers (the uploader's own timeout
    is 60 s): the upload gives up once the service has been silent for the bound, the run stops."""
    emulator, control = emulator_process
    ws = control.create_workspace()
    control.set_faults(ws, [{"kind": "latency", "ms": 3_600_000, "path": "^/upload/"}])
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1))  # type: ignore[arg-type]
    ledger = tmp_path / "ledger.db"
    args = ["migrate", str(inventory), "--no-prefect", "--parent-id", ws.project_id, "--ledger", str(ledger)]
    code, said = _run_frozen([*args, "--via", "tus"], ws, emulator, ledger, tmp_path, None)
    _assert_bounded(code, said, ws, ledger, ws.upload_url)
    assert "within 60 s" not in said, said


def test_a_download_link_that_hangs_is_bounded_too(
    tmp_path: Path, clip_factory: object, emulator_process: tuple[subprocess.Popen[str], EmulatorControl]
) -> None:
    """A backup lists the videos (answered), then the file's link accepts the GET and never answers (the
    downloader's own timeout is 60 s at least): the copy gives up at the bound, the run stops."""
    emulator, control = emulator_process
    ws = control.create_workspace()
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1))  # type: ignore[arg-type]
    made = subprocess.run(
        cli_argv("migrate", str(inventory), "--no-prefect", "--parent-id", ws.project_id,
                 "--ledger", str(tmp_path / "migrate.db")),
        env=cli_env(ws), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    control.set_faults(ws, [{"kind": "latency", "ms": 3_600_000, "path": "^/media/"}])
    ledger = tmp_path / "ledger.db"
    args = ["backup", "--project", ws.project_id, "--to", str(tmp_path / "b"), "--no-prefect"]
    code, said = _run_frozen([*args, "--ledger", str(ledger)], ws, emulator, ledger, tmp_path, None)
    _assert_bounded(code, said, ws, ledger)
