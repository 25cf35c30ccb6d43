"""A job through Prefect and back, written once: the flow's tail, and running a flow from the command line.

Every job's flow (flows/<job>/flow.py) runs its body through job_flow, which ends with flow_tail(outcome):
its lines logged, an outcome artifact (what failed: source, error code, message; where the report is),
Completed with the outcome, or Failed exactly when the exit status is not 0 (a nightly deployment shows red),
its data a JobFailed that carries the outcome, so Prefect can resolve it as the run's exception and the
command line still reads the outcome back. A configuration error (exit status 2: a busy ledger, a missing
token) ends the run Failed the same way, with its message, not a traceback. The command line runs a job's
flow as a deployment's worker does (the same function, its parameters) and reads the outcome with
outcome_of(state).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Failed, State

from videoferry.flows import events
from videoferry.flows.job import Outcome, exit_for, failure

if TYPE_CHECKING:
    from videoferry.connectors.config import Settings

OutcomeT = TypeVar("OutcomeT", bound=Outcome)


class JobFailed(Exception):
    """A job's flow run ended with a non-zero exit status; outcome: what it did (Outcome.as_dict()); cause:
    the exception that ended it, when one did (a configuration error), for the command line to raise again."""

    def __init__(
        self, message: str, outcome: Mapping[str, Any] | None = None, cause: BaseException | None = None
    ) -> None:
        super().__init__(message)
        self.outcome = dict(outcome or {})
        self.cause = cause

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (a result kept by Prefect) without its cause: the message and the outcome travel."""
        return (JobFailed, (str(self), self.outcome))


#: What Prefect's engine logs, with the traceback, when a flow run on a worker ends Failed.
_ENGINE_LINE = "Engine execution exited with unexpected exception"


class _ExpectedFailure(logging.Filter):
    """Drops the engine's traceback of a job that ended with a non-zero exit status: that is the job's
    outcome, said by the Failed state's message and the run's own lines, not an unexpected exception."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (record.getMessage() == _ENGINE_LINE and isinstance(exc, JobFailed))


_FILTER = _ExpectedFailure()


def job_flow(run: Callable[[], OutcomeT], outcome: type[OutcomeT]) -> dict[str, Any] | State[Any]:
    """The body of every job's flow: run(), then flow_tail. An exception the job map knows (exit_for: a
    configuration error, a busy ledger) ends the run Failed with the exit status and its message, not a
    traceback; any other (a bug) goes on up. Emits the run's events (flows/events.py)."""
    events.run_started()
    try:
        done = run()
    except Exception as exc:
        mapped = exit_for(exc)
        if mapped is None:
            raise
        code, message = mapped
        failed = [failure("the run", f"exit {int(code)}", message)]
        return flow_tail(outcome(exit_code=int(code), reasons=[message], failed=failed), cause=exc)
    return flow_tail(done)


def flow_tail(outcome: Outcome, cause: BaseException | None = None) -> dict[str, Any] | State[Any]:
    """The end of every job's flow: log what the run says, make its outcome artifact (what failed, with
    source, error code and message; where the report is); Completed with the outcome, or Failed when its
    exit status is not 0 (its data a JobFailed holding the outcome, and the exception that ended it)."""
    logger = get_run_logger()
    for line in outcome.log_lines():
        logger.info(line)
    create_markdown_artifact(
        outcome_markdown(outcome), key="videoferry-outcome", description="What the run did not do, and why"
    )
    events.run_finished(outcome, cause)
    result = outcome.as_dict()
    if outcome.exit_code == 0:
        return result
    logging.getLogger("prefect.flow_runs").addFilter(_FILTER)
    message = outcome.failure()
    return Failed(message=message, data=JobFailed(message, result, cause))


def outcome_markdown(outcome: Outcome) -> str:
    """The outcome artifact: exit status, the report's files (paths or s3:// URLs), and a table of what
    failed (source, error code, message); no secret (failure() keeps URLs without query strings)."""
    status = "done" if outcome.exit_code == 0 else outcome.failure()
    lines = [f"# {status}", ""]
    if outcome.report_files:
        lines += ["Report: " + ", ".join(f"[{Path(f).name}]({f})" for f in outcome.report_files), ""]
    if outcome.failed:
        lines += [f"{len(outcome.failed)} not done:", "", "| source | code | message |", "|---|---|---|"]
        lines += [
            f"| {markdown_cell(f['source'])} | {markdown_cell(f['code'])} | {markdown_cell(f['message'])} |"
            for f in outcome.failed[:ARTIFACT_FAILURES]
        ]
        if len(outcome.failed) > ARTIFACT_FAILURES:
            more = len(outcome.failed) - ARTIFACT_FAILURES
            lines.append(f"\n... and {more} more (the report has them all)")
    return "\n".join(lines)


#: The most failures the outcome artifact lists.
ARTIFACT_FAILURES = 200


def markdown_cell(text: str) -> str:
    """Text as one cell of a markdown table in an artifact: its pipes escaped, its lines joined."""
    return text.replace("|", "\\|").replace("\n", " ")


def outcome_of(state: State[Any], outcome: type[OutcomeT]) -> OutcomeT:
    """The outcome of a finished flow run (Completed, or Failed with a JobFailed); an exception the flow
    raised, or that ended it (a configuration error, Ctrl-C), is raised again, for the command line's exit
    status."""
    if state.is_completed():
        data = state.result()
    else:
        data = state.result(raise_on_failure=False)
        if isinstance(data, JobFailed):
            if data.cause is not None:
                raise data.cause
            data = data.outcome
        elif isinstance(data, BaseException):
            raise data
    if not isinstance(data, Mapping):
        raise RuntimeError(f"the flow run ended {state.type.value} without an outcome")
    return outcome.from_dict(data)


def flow_params(flow: Any, opts: Any, settings: Settings) -> dict[str, Any]:
    """A flow's parameters for these options: the options it takes, and the service's addresses (never the
    token: the flow reads VIDEOFERRY_TOKEN from the environment of the process running it)."""
    values = {**asdict(opts), "api_url": settings.api_url, "upload_url": settings.upload_url}
    return {name: values[name] for name in inspect.signature(flow.fn).parameters if name in values}


#: What Prefect's engine logs with the flow run's page (prefect.flow_engine).
_LINK_LINE = "View at "
#: What replaces that line when the run is kept by a temporary server: its page is gone with the command.
TEMPORARY_SERVER = (
    "Prefect keeps this run on a temporary local server that stops when the command returns (no page to"
    " view); set PREFECT_API_URL to a Prefect server to keep runs and their links"
)


class _NoDeadLink(logging.Filter):
    """Says the run's server is temporary instead of logging a link to a page that is gone (or never was:
    the temporary server has no UI) when the command returns."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_LINK_LINE):
            record.msg, record.args = TEMPORARY_SERVER, ()
        return True


def run_flow(
    flow: Callable[..., Any],
    params: Mapping[str, Any],
    outcome: type[OutcomeT],
    announce: Callable[[str], None] | None = None,
) -> OutcomeT:
    """Run a job's flow in this process, as a deployment's worker runs it, and read its outcome back. On a
    temporary server (flows/warmup.is_temporary) the run's "View at" link is replaced by TEMPORARY_SERVER;
    a server PREFECT_API_URL names keeps its link, and with `announce` the flow run is created first so
    that announce(line) can say, before the run says anything, where its page is (run_line)."""
    from prefect.settings import PREFECT_API_URL

    from videoferry.flows.warmup import is_temporary

    engine = logging.getLogger("prefect.flow_runs")
    temporary = is_temporary(PREFECT_API_URL.value())
    note = _NoDeadLink() if temporary else None
    if note is not None:
        engine.addFilter(note)
    try:
        if announce is None or temporary:
            return outcome_of(flow(**params, return_state=True), outcome)
        from prefect.client.orchestration import get_client
        from prefect.flow_engine import run_flow as run_on_engine

        with get_client(sync_client=True) as client:
            flow_run = client.create_flow_run(flow, parameters=dict(params))  # type: ignore[arg-type]
        announce(run_line(flow_run.id, flow_run.name))
        state: Any = run_on_engine(
            flow,  # type: ignore[arg-type]
            flow_run=flow_run,
            parameters=dict(params),
            return_type="state",
        )
        return outcome_of(state, outcome)
    finally:
        if note is not None:
            engine.removeFilter(note)


def run_line(flow_run_id: Any, name: str) -> str:
    """The line that says a run goes through a Prefect server, and where its page is (the UI's, else the
    API's address of the flow run)."""
    from prefect.settings import PREFECT_API_URL
    from prefect.utilities.urls import url_for

    page = url_for("flow-run", obj_id=flow_run_id) or f"{PREFECT_API_URL.value()}/flow_runs/{flow_run_id}"
    return f"through Prefect: flow run {name} at {page}"
