"""A job through Prefect and back, written once: the flow's tail, and running a flow from the command line.

Every job's flow (flows/<job>/flow.py) ends with flow_tail(outcome): its lines logged, Completed with the
outcome, or Failed exactly when the exit status is not 0 (a nightly deployment shows red), its data a
JobFailed that carries the outcome, so Prefect can resolve it as the run's exception and the command line
still reads the outcome back. The command line runs a job's flow as a deployment's worker does (the same
function, its parameters) and reads the outcome with outcome_of(state).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TypeVar

from prefect import get_run_logger
from prefect.states import Failed, State

from flows.job import Outcome

if TYPE_CHECKING:
    from connectors.config import Settings

OutcomeT = TypeVar("OutcomeT", bound=Outcome)


class JobFailed(Exception):
    """A job's flow run ended with a non-zero exit status; outcome: what it did (Outcome.as_dict())."""

    def __init__(self, message: str, outcome: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.outcome = dict(outcome or {})


def flow_tail(outcome: Outcome) -> dict[str, Any] | State[Any]:
    """The end of every job's flow: log what the run says; Completed with the outcome, or Failed when its
    exit status is not 0 (its data a JobFailed holding the outcome)."""
    logger = get_run_logger()
    for line in outcome.log_lines():
        logger.info(line)
    result = outcome.as_dict()
    if outcome.exit_code == 0:
        return result
    message = outcome.failure()
    return Failed(message=message, data=JobFailed(message, result))


def outcome_of(state: State[Any], outcome: type[OutcomeT]) -> OutcomeT:
    """The outcome of a finished flow run (Completed, or Failed with a JobFailed); an exception the flow
    raised (a configuration error, Ctrl-C) is raised again, for the command line's exit status."""
    if state.is_completed():
        data = state.result()
    else:
        data = state.result(raise_on_failure=False)
        if isinstance(data, JobFailed):
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


def run_flow(flow: Callable[..., Any], params: Mapping[str, Any], outcome: type[OutcomeT]) -> OutcomeT:
    """Run a job's flow in this process, as a deployment's worker runs it, and read its outcome back."""
    return outcome_of(flow(**params, return_state=True), outcome)
