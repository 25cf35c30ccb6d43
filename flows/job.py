"""The job skeleton every job's runner stands on: its ledger, run, client and rate limiter, the run's status,
the configuration errors and the one map from exceptions to exit statuses, Ctrl-C; written once.

A runner (flows/<job>/runner.py) is run_job(name, options, settings, body): body(run) does the job's own work
with run.ledger, run.client and run.stop and returns the job's Outcome; the skeleton opens the ledger (at
ledger_path(), the one place that says where a ledger's file is), starts the run (LedgerBusyError when another
holds it), makes the client with the run's rate limiter, stops the workers and marks the run interrupted on
Ctrl-C, finishes the run with the status its exit status tells (RunStatus: the same words for every job), and
closes what it opened.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, fields
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from connectors.config import ConfigError
from tasks.stop import ServiceUnavailable, Stop

# Light at import (the command line reads this module for every command, --help included): the ledger,
# the client and the error classes are imported where they are used.
if TYPE_CHECKING:
    from connectors.client import VideoClient
    from connectors.config import Settings
    from state.ledger import Ledger
    from state.machine import RunStatus

__all__ = [
    "ConfigError",
    "Exit",
    "Interrupted",
    "Job",
    "Outcome",
    "Run",
    "ServiceUnavailable",
    "catch_interrupts",
    "exit_for",
    "ledger_path",
    "read_ledger",
    "run_job",
    "run_status",
    "stopped_exit",
]


class Exit(IntEnum):
    """A command's exit status, the same for every job."""

    DONE = 0  # everything asked is done
    INCOMPLETE = 1  # something is not done (failed, left waiting, differs): the lines say what
    CONFIG = 2  # configuration to fix first (a variable, the token, an input file, the ledger)
    INTERRUPTED = 130  # Ctrl-C: rerun the same command to resume


class Interrupted(KeyboardInterrupt):
    """Ctrl-C ended a run: its message says which run stopped and that a rerun resumes (exit status 130)."""


def exit_for(exc: BaseException) -> tuple[Exit, str] | None:
    """The one map from an exception to the exit status and the message a command ends with; None for an
    error of videoferry itself (a bug: its traceback says where).

    ConfigError is the root of every configuration error (connectors.config: missing variables; each job's
    option checks, the desired-state file's rules); a refused token, an unreadable input file and a ledger
    that cannot be used are configuration to fix first too.
    """
    from connectors.errors import AuthError, VideoApiError
    from connectors.input_files import InputFileError
    from state.errors import LedgerError

    if isinstance(exc, Interrupted) and str(exc):
        return Exit.INTERRUPTED, str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return Exit.INTERRUPTED, "interrupted before the run began: nothing was sent; rerun the same command"
    if isinstance(exc, AuthError):
        return Exit.CONFIG, f"the service refused the token (VIDEOFERRY_TOKEN): {exc}"
    if isinstance(exc, ConfigError | InputFileError | LedgerError):
        return Exit.CONFIG, str(exc)
    if isinstance(exc, ServiceUnavailable):
        return Exit.INCOMPLETE, str(exc)
    if isinstance(exc, VideoApiError):
        return Exit.INCOMPLETE, f"the service answered {type(exc).__name__} (code {exc.code})"
    return None


def stopped_exit(stop: Stop) -> Exit:
    """The exit status of a run its stop ended (a refused token: 2; Ctrl-C: 130; anything else: 1)."""
    mapped = exit_for(stop.cause) if stop.cause is not None else None
    return mapped[0] if mapped is not None else Exit.INCOMPLETE


def run_status(exit_code: int) -> RunStatus:
    """The status a run ends in, told by its exit status (RunStatus: the same words for every job)."""
    from state.machine import RunStatus

    statuses: dict[int, RunStatus] = {
        Exit.DONE: RunStatus.DONE,
        Exit.INCOMPLETE: RunStatus.INCOMPLETE,
        Exit.CONFIG: RunStatus.REFUSED,
        Exit.INTERRUPTED: RunStatus.INTERRUPTED,
    }
    return statuses.get(exit_code, RunStatus.FAILED)


@dataclass
class Outcome:
    """How a run of a job ended: its exit status and the lines that say why (each job adds its own fields)."""

    exit_code: int
    reasons: list[str] = field(default_factory=list)
    report_files: list[str] = field(default_factory=list)

    def log_lines(self) -> list[str]:
        """What the run says: the flow logs these, and names a failure by the first."""
        return list(self.reasons)

    def failure(self) -> str:
        """The message of a Failed flow run: the exit status and what went wrong first."""
        lines = [line.strip() for line in self.log_lines() if line.strip()]
        return f"exit status {self.exit_code}: {lines[0] if lines else 'not everything is done'}"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly form (the flow's result)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The outcome a flow returned (as_dict's form)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Job:
    """A job as the command line and the deployments run it: its plain runner, its outcome and its Prefect
    flow, each named "module:attribute" and imported only when run (Prefect and the runners are heavy)."""

    name: str
    runner: str  #: (options, settings) -> Outcome
    outcome: str  #: the Outcome class
    flow: str | None = None  #: its Prefect flow (None: the job has none)

    def load(self, what: str) -> Any:
        """The runner, outcome or flow this job names."""
        module, _, attribute = what.partition(":")
        return getattr(importlib.import_module(module), attribute)


def ledger_path(uri: str | Path) -> Path:
    """Where the ledger `uri` names is, as a local file: the one place that says so (a remote ledger,
    `--ledger s3://...`, will be a local copy fetched here before the run and put back after it)."""
    return Path(uri).expanduser()


@contextmanager
def read_ledger(uri: str | Path) -> Iterator[Ledger | None]:
    """The ledger to read what earlier runs recorded (no run, no lock), or None when there is none yet."""
    from state.ledger import Ledger

    path = ledger_path(uri)
    if not path.exists():
        yield None
        return
    ledger = Ledger.open(path, create=False)
    try:
        yield ledger
    finally:
        ledger.close()


@dataclass
class Run:
    """One run of a job: its ledger (locked for it), its run id, the settings and the client (its calls
    counted by the run's rate limiter), and its stop; summary() is what the run is finished with.

    on_end() registers what stops the job's workers once the body is over (pools, receivers), before the run
    is finished; on_close() what to close after it (the job's own resources); each last registered first.
    """

    name: str
    ledger: Ledger
    run_id: str
    settings: Settings
    client: VideoClient
    stop: Stop = field(default_factory=Stop)
    summary: Callable[[], Mapping[str, Any]] = dict
    _ending: ExitStack = field(default_factory=ExitStack, repr=False)
    _closing: ExitStack = field(default_factory=ExitStack, repr=False)

    def on_end(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Call callback(*args, **kwargs) once the body is over, before the run is finished."""
        self._ending.callback(callback, *args, **kwargs)

    def on_close(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Call callback(*args, **kwargs) after the run is finished, before its client and ledger close."""
        self._closing.callback(callback, *args, **kwargs)


OutcomeT = TypeVar("OutcomeT", bound=Outcome)


def run_job(
    name: str,
    params: Mapping[str, Any],
    ledger: str | Path,
    settings: Settings,
    body: Callable[[Run], OutcomeT],
) -> OutcomeT:
    """Run body as one run of the job `name` on its ledger: the service's addresses checked (they answer at
    all), open, start (params recorded, secrets dropped), client, body, finish with the status its outcome's
    exit status tells, close.

    Ctrl-C stops the run (its workers take no new work), marks it interrupted and goes on up as Interrupted
    (which run stopped, and that a rerun resumes). An exception the map knows (exit_for) ends the run with the
    status of its exit status; any other ends it failed.
    """
    from state.ledger import Ledger
    from state.machine import RunStatus
    from tasks.preflight import check_reachable
    from tasks.service import run_client

    check_reachable(settings)  # a typo'd address: exit status 2 within seconds, before the ledger is touched
    path = ledger_path(ledger)
    book = Ledger.open(path)
    try:
        run_id = book.start_run(name, params)
    except BaseException:  # e.g. another run holds the ledger: give the connection back before saying so
        book.close()
        raise
    run = Run(name, book, run_id, settings, run_client(settings, str(path)))
    status = RunStatus.FAILED
    try:
        with run._ending:
            try:
                outcome = body(run)
            except KeyboardInterrupt:
                run.stop(KeyboardInterrupt("interrupted by the user"))  # the workers take no new work
                raise
        status = run_status(outcome.exit_code)
        return outcome
    except KeyboardInterrupt:
        status = RunStatus.INTERRUPTED
        raise Interrupted(_interrupted(run)) from None
    except BaseException as exc:
        mapped = exit_for(exc)
        status = run_status(mapped[0]) if mapped is not None else RunStatus.FAILED
        raise
    finally:
        try:
            book.finish_run(run_id, status, run.summary())
        finally:
            try:
                run._closing.close()
            finally:
                run.client.close()
                book.close()


# -- Ctrl-C ------------------------------------------------------------------------------------------------

#: After the first Ctrl-C a run has this long to stop its workers and record the run interrupted; then (or at
#: a second Ctrl-C) the process ends at once, as a kill would end it: the next run settles what was in flight.
STOP_GRACE_SECONDS = 10.0
#: The wakeup socket of catch_interrupts (referenced here so it is never closed while the fd is set).
_WAKEUP: list[Any] = []


def _interrupted(run: Run) -> str:
    """What Ctrl-C stopped, for the one line a command ends with."""
    done = ""
    try:
        summary = run.summary()
        if summary.get("items"):
            done = f" ({summary.get('complete', 0)} of {summary['items']} items complete)"
    except Exception:  # the line is said whatever the ledger can tell
        done = ""
    return (
        f"interrupted: the {run.name} run {run.run_id} stopped{done};"
        " rerun the same command to resume where it stopped"
    )


def catch_interrupts(grace: float = STOP_GRACE_SECONDS) -> None:
    """Ctrl-C for a command's process (call once, from the main thread): the first raises KeyboardInterrupt
    where the command is (the run stops its workers and ends with exit status 130, its own line said) and
    hushes the log lines of the stopping; the process ends at once, with exit status 130, at a second Ctrl-C
    or when stopping takes longer than `grace` seconds.

    The kernel may hand a signal to any thread, and Python runs its handler only in the main thread once that
    thread runs Python again (not while it waits for a worker), so a watcher thread reads every signal's
    number from the wakeup fd (signal.set_wakeup_fd) and counts the presses itself.
    """
    import os
    import signal
    import socket
    import sys
    import threading

    presses = {"count": 0}
    lock = threading.Lock()

    def stop_now(why: str) -> None:
        try:
            sys.stderr.write(f"\ninterrupted ({why}): stopped at once; a rerun settles what was in flight\n")
            sys.stderr.flush()
        finally:
            os._exit(int(Exit.INTERRUPTED))

    def pressed() -> None:
        with lock:
            presses["count"] += 1
            count = presses["count"]
        if count == 1:
            _hush_logs()
            watchdog = threading.Timer(grace, stop_now, args=(f"still stopping after {grace:g} s",))
            watchdog.daemon = True
            watchdog.start()
        else:
            stop_now("a second Ctrl-C")

    def on_sigint(signum: int, frame: Any) -> None:
        if not raised.is_set():  # the first press only: a later one is the watcher's, at once
            raised.set()
            raise KeyboardInterrupt

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    _WAKEUP.append(writer)  # kept open for the process's life: the signal's C handler writes to its fd

    def watch() -> None:
        while True:
            data = reader.recv(64)
            if not data:
                return
            for number in data:
                if number == signal.SIGINT:
                    pressed()

    raised = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may handle signals: Python's default Ctrl-C stays
    signal.signal(signal.SIGINT, on_sigint)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    threading.Thread(target=watch, name="interrupts", daemon=True).start()


def _hush_logs() -> None:
    """While a run stops after Ctrl-C, no log line reaches the terminal (the command says one line): our own
    loggers and Prefect's console handlers are raised above CRITICAL (Prefect's API still gets its logs)."""
    import logging

    for name in ("connectors", "core", "flows", "state", "tasks"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                handler.setLevel(logging.CRITICAL + 1)
