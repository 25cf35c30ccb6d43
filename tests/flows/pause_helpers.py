"""Helpers for a holder that wakes after its lease: a run's whole process group stopped (SIGSTOP, what a
frozen container or a suspended machine looks like) and woken (SIGCONT) while or after another run holds the
ledger; what the service was sent since a moment."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.flows.helpers import cli_argv
from tests.flows.remote_helpers import local_copy, read_local
from videoferry.emulator.control import EmulatorControl, Workspace

#: Methods that only read: any other request may change the service.
READS = ("GET", "HEAD", "OPTIONS")


@dataclass
class Started:
    """A videoferry run started in its own process group, its output in files (a stopped run's pipes would
    fill and block it once woken)."""

    proc: subprocess.Popen[str]
    out: Path
    err: Path

    def stop(self) -> None:
        """SIGSTOP the run's whole process group: every thread of it stops at once."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def wake(self) -> None:
        """SIGCONT the run's process group."""
        os.killpg(self.proc.pid, signal.SIGCONT)

    def finish(self, timeout: float) -> tuple[int, str]:
        """Wait for the run's end (bounded): its exit status and its output (stdout then stderr)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the run did not end within {timeout:g} s: {self.output()[-3000:]}"
            ) from None
        return code, self.output()

    def output(self) -> str:
        return self.out.read_text(errors="replace") + self.err.read_text(errors="replace")

    def kill(self) -> None:
        """Whatever state it is in: SIGKILL its process group (nothing when it has ended)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)


def start(args: list[str], env: dict[str, str], folder: Path, name: str) -> Started:
    """Start `videoferry ARGS...` in a new session (its own process group)."""
    folder.mkdir(parents=True, exist_ok=True)
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            cli_argv(*args), env=env, stdout=o, stderr=e, text=True, start_new_session=True
        )
    return Started(proc, out, err)


def changes_since(control: EmulatorControl, ws: Workspace, since: float) -> list[dict[str, Any]]:
    """The requests that may have changed the workspace since `since` (the emulator runs on this machine)."""
    return [r for r in control.requests(ws.workspace_id, since=since) if r["method"] not in READS]


def holding(url: str, workdir: Path) -> Callable[[], bool]:
    """Whether the run with this working folder holds the ledger (its copy shows its run running)."""
    copy = local_copy(url, workdir)
    return lambda: bool(read_local(copy, lambda book: book.runs("running"), []))


def take_over(
    args: list[str], env: dict[str, str], url: str, workdir: Path, folder: Path, bound: float
) -> Started:
    """Start the same command from another folder until it holds the ledger (refused while the stopped
    holder's lease runs: exit 2); the started run, holding it."""
    deadline = time.monotonic() + bound
    attempt = 0
    held = holding(url, workdir)
    while True:
        attempt += 1
        run = start(args, env, folder, f"take-{attempt}")
        while run.proc.poll() is None and not held():
            if time.monotonic() > deadline:
                run.kill()
                raise AssertionError("the second run never took the ledger")
            time.sleep(0.1)
        if held():
            return run
        code, output = run.finish(30)
        assert code == 2 and "is in use by another run" in output, output[-3000:]
        assert time.monotonic() < deadline, "the stopped holder's lease never ran out"
        time.sleep(0.5)
