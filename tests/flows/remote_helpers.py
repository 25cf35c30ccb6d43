"""Helpers for remote-ledger tests: replication paused to open a real gap, kill -9, the replica read."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from tests.connectors.waiting import poll
from videoferry.connectors.ledger_remote import local_path, open_readonly
from videoferry.connectors.s3 import S3Config
from videoferry.state.ledger import Ledger

#: A lease short enough for a test to wait out, long enough for a loaded machine to renew it in time.
TEST_LEASE = "10"


def remote_env(base: dict[str, str], workdir: Path, **extra: str) -> dict[str, str]:
    """A videoferry subprocess's environment with its own working folder and the test lease."""
    return {**base, "VIDEOFERRY_WORKDIR": str(workdir), "VIDEOFERRY_LEDGER_LEASE": TEST_LEASE, **extra}


def local_copy(url: str, workdir: Path) -> Path:
    """Where a run with this working folder keeps its copy of the remote ledger."""
    return local_path(url, workdir)


def read_local(path: Path, read: Callable[[Ledger], Any], default: Any) -> Any:
    """read(ledger) on a running run's local copy, or default while it cannot be opened yet."""
    if not path.exists():
        return default
    try:
        ledger = Ledger.open(path, create=False)
    except Exception:
        return default
    try:
        return read(ledger)
    except Exception:
        return default
    finally:
        ledger.close()


def litestream_of(proc: subprocess.Popen[str]) -> psutil.Process:
    """The Litestream process replicating a run's remote ledger (a child of the run)."""

    def find() -> psutil.Process | None:
        for child in psutil.Process(proc.pid).children(recursive=True):
            try:
                if "litestream" in child.name():
                    return child
            except psutil.NoSuchProcess:
                continue
        return None

    found = poll(find, 60, "the run's litestream to start")
    assert isinstance(found, psutil.Process)
    return found


def pause_replication(proc: subprocess.Popen[str]) -> psutil.Process:
    """Stop the run's Litestream (SIGSTOP): from now on nothing the run commits reaches S3, like a machine
    whose network to S3 is gone. The run itself goes on (its lease is renewed by its own thread)."""
    engine = litestream_of(proc)
    engine.send_signal(signal.SIGSTOP)
    return engine


def lose_machine(proc: subprocess.Popen[str], engine: psutil.Process | None) -> None:
    """kill -9 the run and its Litestream (if it has one yet) at once, and wait until both are gone (a
    Litestream left running, or not yet ended, could still write into a folder the caller removes next)."""
    proc.send_signal(signal.SIGKILL)  # nothing when the run has already ended
    if engine is not None:
        try:
            engine.send_signal(signal.SIGKILL)
            engine.wait(timeout=30)
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)


def kill_run(proc: subprocess.Popen[str], engine: psutil.Process) -> None:
    """The machine is gone while the run still ran: lose_machine, and the kill is what ended the run."""
    lose_machine(proc, engine)
    assert proc.returncode == -signal.SIGKILL


def replica(url: str, endpoint: str, read: Callable[[Ledger], Any]) -> tuple[Any, str]:
    """read(ledger) on what S3 holds now (restored read-only), and why that copy may be behind."""
    with open_readonly(url, S3Config(endpoint_url=endpoint)) as copy:
        assert copy.exists, f"no replica of {url}"
        ledger = Ledger.open(copy.path, create=False)
        try:
            return read(ledger), copy.behind_reason
        finally:
            ledger.close()


def wait_for(check: Callable[[], Any], bound: float, what: str, proc: subprocess.Popen[str]) -> Any:
    """Poll check() until true, failing early (with the run's output) if the run ends first."""

    def step() -> Any:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            err = proc.stderr.read() if proc.stderr else ""
            tail = out[-2000:] + err[-2000:]
            raise AssertionError(f"the run ended ({proc.returncode}) before {what}: {tail}")
        return check()

    return poll(step, bound, what)


def rerun_until_free(
    run: Callable[[], subprocess.CompletedProcess[str]], bound: float
) -> tuple[subprocess.CompletedProcess[str], list[subprocess.CompletedProcess[str]]]:
    """Run the command until the dead holder's lease has run out: the final run and the refused ones."""
    refused: list[subprocess.CompletedProcess[str]] = []
    deadline = time.monotonic() + bound
    while True:
        done = run()
        if done.returncode != 2 or "is in use by another run" not in done.stderr:
            return done, refused
        refused.append(done)
        assert time.monotonic() < deadline, "the dead holder's lease never ran out"
        time.sleep(1.0)


def assert_kept_out(
    rerun: subprocess.CompletedProcess[str],
    refused: list[subprocess.CompletedProcess[str]],
    url: str,
    pid: int,
    job: str,
) -> None:
    """The dead holder (pid, running job) kept the ledger while its lease ran, and the run admitted after it
    knew that holder never settled.

    Whether any try was refused is timing: on a loaded machine, reading the replica after the kill can
    outlast the lease (10 s here). So no refusal is required; each refusal must name the holder, and the
    admitted run must say whose unsettled copy it restored.
    """
    for busy in refused:
        assert busy.returncode == 2 and f"ledger {url} is in use by another run (host " in busy.stderr
        assert f"pid {pid}," in busy.stderr and f"run {job}" in busy.stderr, busy.stderr[-3000:]
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    behind = "the restored copy may be behind (its last holder (host "
    unsettled = "did not settle: its lease expired"
    assert behind in rerun.stderr and unsettled in rerun.stderr, rerun.stderr[-3000:]
    assert f"pid {pid}," in rerun.stderr and f"run {job}" in rerun.stderr, rerun.stderr[-3000:]


def kill_in_the_gap(
    argv: list[str], env: dict[str, str], url: str, workdir: Path, count: Callable[[Ledger], int], what: str
) -> int:
    """Run argv with its remote ledger's copy in workdir; once count (read from the local copy) shows one
    `what`, stall replication; once it shows two more, kill -9 the run and its Litestream and delete workdir
    (the machine and its disk are gone): the replica lacks two of them at least. Returns the run's pid."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    copy = local_copy(url, workdir)
    try:
        wait_for(lambda: read_local(copy, count, 0) >= 1, 120, f"a first {what}", proc)
        engine = pause_replication(proc)
        at_pause = read_local(copy, count, 0)
        wait_for(lambda: read_local(copy, count, 0) >= at_pause + 2, 120, f"two {what}s in the gap", proc)
    except BaseException:
        proc.kill()
        raise
    kill_run(proc, engine)
    shutil.rmtree(workdir)
    return proc.pid
