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

import gc
import importlib
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from connectors.config import ConfigError
from flows.job_remote import close_gap, hold_on, hold_remote
from flows.outcome import CopyOutcome, Outcome, failure, step_of
from tasks.stop import ServiceUnavailable, Stop, outage_seconds

# Light at import (the command line reads this module for every command, --help included): the ledger,
# the client and the error classes are imported where they are used.
if TYPE_CHECKING:
    from datetime import datetime

    from connectors.client import VideoClient
    from connectors.config import Settings
    from connectors.ledger_remote import RemoteLedger
    from state.ledger import Ledger
    from state.machine import RunStatus
    from tasks.gap import Gap
    from tasks.gap_mark import GapMark

log = logging.getLogger(__name__)

__all__ = [
    "ConfigError",
    "CopyOutcome",
    "Exit",
    "Interrupted",
    "Job",
    "Outcome",
    "Run",
    "ServiceUnavailable",
    "exit_for",
    "failure",
    "ledger_path",
    "step_of",
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
    that cannot be used are configuration to fix first too (a remote ledger another run holds: exit 2 naming
    the holder; one this run lost mid-way: exit 1, rerun). A refusal of the workspace's state (quota, balance,
    subscription, e-mail: connectors.errors.WorkspaceRefusedError) is exit 1 with its one line.
    """
    from connectors.errors import AuthError, ServiceSilentError, VideoApiError, WorkspaceRefusedError
    from connectors.input_files import InputFileError
    from connectors.ledger_errors import RemoteLedgerError, RemoteLedgerLostError
    from connectors.platforms.base import PlatformError
    from state.errors import LedgerError
    from tasks.gap import GapListingFailed

    if isinstance(exc, Interrupted) and str(exc):
        return Exit.INTERRUPTED, str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return Exit.INTERRUPTED, "interrupted before the run began: nothing was sent; rerun the same command"
    if isinstance(exc, AuthError):
        return Exit.CONFIG, f"the service refused the token (VIDEOFERRY_TOKEN): {exc}"
    if isinstance(exc, RemoteLedgerLostError):  # lost mid-run: what was done is recorded; rerun
        return Exit.INCOMPLETE, f"{exc}; rerun the same command to go on"
    if isinstance(exc, ConfigError | InputFileError | LedgerError | RemoteLedgerError):
        return Exit.CONFIG, str(exc)
    if isinstance(exc, ServiceUnavailable | GapListingFailed):
        return Exit.INCOMPLETE, str(exc)
    if isinstance(exc, PlatformError):  # a source's listing not finished (gone, malformed): nothing was sent
        return Exit.INCOMPLETE, f"{exc}; nothing was sent: rerun once the source answers"
    if isinstance(exc, WorkspaceRefusedError):
        return Exit.INCOMPLETE, str(exc)  # the code, its name, what to do, and that a rerun resumes
    if isinstance(exc, ServiceSilentError):  # the service answered nothing for its bound
        return Exit.INCOMPLETE, exc.message
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
    """Where the ledger `uri` names is, as a local file: the one place that says so. A remote ledger
    (`--ledger s3://bucket/key`) is a local copy in the working folder (connectors.ledger_remote:
    VIDEOFERRY_WORKDIR, else ~/.cache/videoferry), restored there when a run starts and replicated while it
    runs; the file exists only while a run holds it (and after, until the next run restores it again)."""
    from connectors.ledger_remote import default_workdir, is_remote_ledger, local_path

    if is_remote_ledger(uri):
        return local_path(str(uri), default_workdir())
    return Path(uri).expanduser()


@contextmanager
def read_ledger(uri: str | Path, notes: list[str] | None = None) -> Iterator[Ledger | None]:
    """The ledger to read what earlier runs recorded (no run, no lock), or None when there is none yet.

    A remote ledger is restored into a temporary folder without its lock (status, report, dry runs); when
    that copy may miss what a run wrote since its last sync (a run holds it now, or its last holder died),
    `notes` gets a line saying so.
    """
    from connectors.ledger_remote import is_remote_ledger, open_readonly
    from state.ledger import Ledger

    if is_remote_ledger(uri):
        with open_readonly(str(uri)) as copy:
            if copy.may_be_behind and notes is not None:
                notes.append(f"ledger {uri}: this copy may be behind: {copy.behind_reason}")
            if not copy.exists:
                yield None
                return
            ledger = Ledger.open(copy.path, create=False)
            try:
                yield ledger
            finally:
                ledger.close()
        return
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
    On a remote ledger: gap is the replication gap when the restored copy may be behind (tasks/gap.py; None
    otherwise), durable() pushes every committed write to S3 before it returns (a local ledger's writes
    are durable when committed: nothing to do), and guard() raises RemoteLedgerLostError once the run may no
    longer hold the ledger (its lease's deadline passed): called right before anything takes effect (the
    client's requests that change the service, a destination's writes).
    """

    name: str
    ledger: Ledger
    run_id: str
    settings: Settings
    client: VideoClient
    stop: Stop = field(default_factory=Stop)
    summary: Callable[[], Mapping[str, Any]] = dict
    gap: Gap | None = None
    durable: Callable[[], None] = field(default=lambda: None, repr=False)
    guard: Callable[[], None] = field(default=lambda: None, repr=False)
    _ending: ExitStack = field(default_factory=ExitStack, repr=False)
    _closing: ExitStack = field(default_factory=ExitStack, repr=False)

    def on_end(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Call callback(*args, **kwargs) once the body is over, before the run is finished."""
        self._ending.callback(callback, *args, **kwargs)

    def on_close(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Call callback(*args, **kwargs) after the run is finished, before its client and ledger close."""
        self._closing.callback(callback, *args, **kwargs)


OutcomeT = TypeVar("OutcomeT", bound=Outcome)


#: Set by the command line (flows/cli.main), whose process runs one job: the run first puts what the process
#: made so far (its imports: Prefect's, polars', the client's models) out of the garbage collector's sight
#: (gc.freeze). Those objects live as long as the process; the collector's full passes then walk what the run
#: makes, not them too (a 1000-item migrate measured 0.41 s of collection, 0.23 s with it).
FREEZE_ON_START = False


def run_job(
    name: str,
    params: Mapping[str, Any],
    ledger: str | Path,
    settings: Settings,
    body: Callable[[Run], OutcomeT],
    *,
    token_check: bool = False,
) -> OutcomeT:
    """Run body as one run of the job `name` on its ledger: the service's addresses checked (they answer,
    with the service's routes under them), with token_check the token too (one list call: a job that plans
    into its ledger plans nothing for a token or an address the service refuses), open, start (params
    recorded, secrets dropped), client, body, finish with the status its outcome's exit status tells, close.

    A remote ledger (s3://) is held for the whole run (connectors/ledger_remote.py): its lock taken (another
    run holding it: RemoteLedgerBusyError naming it, exit status 2), the replica restored into the working
    folder, replicated while the run writes, settled after the ledger is closed. No intent is written once
    the lock is lost (the run stops; exit status 1). When the restored copy may be behind, run.gap says so and
    the jobs look up what it does not show settled before creating it; a run that looked everything up marks
    the ledger reconciled.

    Ctrl-C stops the run (its workers take no new work), marks it interrupted and goes on up as Interrupted
    (which run stopped, and that a rerun resumes). An exception the map knows (exit_for) ends the run with the
    status of its exit status; any other ends it failed.
    """
    from connectors.ledger_remote import is_remote_ledger
    from tasks.preflight import check_reachable, check_token

    if FREEZE_ON_START:
        gc.freeze()
    outage_seconds()  # a bad VIDEOFERRY_OUTAGE_SECONDS: exit status 2 before anything is touched
    check_reachable(settings)  # a typo'd address: exit status 2 within seconds, before the ledger is touched
    if token_check:
        check_token(settings, ledger)  # a refused token: exit status 2, nothing in the ledger
    if not is_remote_ledger(ledger):
        return _run_on(name, params, ledger, None, settings, body)
    with hold_remote(str(ledger), name) as home:  # settled after the run's ledger is closed
        return _run_on(name, params, ledger, home, settings, body)


def _run_on(
    name: str,
    params: Mapping[str, Any],
    ledger: str | Path,
    home: RemoteLedger | None,
    settings: Settings,
    body: Callable[[Run], OutcomeT],
) -> OutcomeT:
    from state.ledger import Ledger
    from state.machine import RunStatus
    from tasks.gap_mark import open_mark
    from tasks.service import run_client

    book = Ledger.open(home.path if home is not None else ledger_path(ledger))
    client = run_client(settings, ledger)
    held: tuple[GapMark, datetime | None] | None = None
    try:
        if home is not None:
            book.guard_intents(home.check)  # no intent (so no call) once the lock is lost
            held = open_mark(book, client, behind=home.may_be_behind, push=home.sync)
        run_id = book.start_run(name, params)
    except BaseException:  # e.g. another run holds the ledger: give the connection back before saying so
        client.close()
        book.close()
        raise
    run = Run(name, book, run_id, settings, client)
    # The service answered nothing for VIDEOFERRY_OUTAGE_SECONDS: the run stops (exit status 1), in every job.
    run.client.transport.silence.on_silent = lambda message: run.stop(ServiceUnavailable(message))
    status = RunStatus.FAILED
    try:
        if home is not None and held is not None:
            hold_on(run, home, *held)
        with run._ending:
            try:
                outcome = body(run)
            except KeyboardInterrupt:
                run.stop(KeyboardInterrupt("interrupted by the user"))  # the workers take no new work
                raise
        _said_silence(run, outcome)
        _said_stop(run, outcome)
        status = run_status(outcome.exit_code)
        if home is not None and run.gap is not None and held is not None:
            close_gap(home, run.gap, book, held[0])
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
            book.finish_run(run_id, status, _finished_summary(run))
        finally:
            try:
                run._closing.close()
            finally:
                run.client.close()
                book.close()


def _finished_summary(run: Run) -> dict[str, Any]:
    """What the run is finished with: its job's summary, and what stopped it when something did (`status` and
    `report` say it beside the last run)."""
    summary = dict(run.summary())
    if run.stop.cause is not None and not isinstance(run.stop.cause, KeyboardInterrupt):
        summary["stopped"] = run.stop.reason
    return summary


def _said_silence(run: Run, outcome: Outcome) -> None:
    """A run the service's silence stopped ends with exit status 1 and says so first, whatever the job's body
    made of the calls that were not sent (each job's own lines follow)."""
    cause = run.stop.cause
    if not isinstance(cause, ServiceUnavailable):
        return
    if outcome.exit_code == Exit.DONE:
        outcome.exit_code = Exit.INCOMPLETE
    if not any(str(cause) in line for line in outcome.reasons):
        outcome.reasons.insert(0, f"stopped: {cause}")


def _said_stop(run: Run, outcome: Outcome) -> None:
    """What stopped the run early, on its outcome (flows/events.py emits a refusal or a lost lease)."""
    cause = run.stop.cause
    if cause is None or isinstance(cause, KeyboardInterrupt) or outcome.stopped:
        return
    outcome.stopped = stop_said(cause)


def stop_said(cause: BaseException) -> dict[str, str]:
    """What an exception that stopped a run says (Outcome.stopped): kind (workspace-refused, ledger-lost, else
    its class name), message, and the service's code when it has one."""
    from connectors.errors import WorkspaceRefusedError
    from connectors.ledger_errors import RemoteLedgerLostError

    kind = type(cause).__name__
    if isinstance(cause, WorkspaceRefusedError):
        kind = "workspace-refused"
    elif isinstance(cause, RemoteLedgerLostError):
        kind = "ledger-lost"
    said = {"kind": kind, "message": str(cause)}
    code = getattr(cause, "code", None)
    if code:
        said["code"] = str(code)
    return said


# -- Ctrl-C (the process's handling: flows/interrupts.py) ---------------------------------------------------


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
