"""Running a job through its Prefect flow or its plain runner: one path for the command line and the API."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from videoferry.flows.prefect_server import configured_api_url

if TYPE_CHECKING:
    from videoferry.connectors.config import Settings
    from videoferry.flows.job import Job


def in_flow_run() -> bool:
    """Whether this code runs inside a Prefect flow run (a user's own flow calling the API): a job's flow
    then runs as its subflow. Prefect is not imported to say no."""
    if "prefect" not in sys.modules:
        return False
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


def use_prefect(given: bool | None) -> bool:
    """Whether a job runs through its flow: as given (--prefect / --no-prefect, prefect=); else inside a
    flow run, or when a Prefect server is configured (PREFECT_API_URL or the active profile)."""
    if given is not None:
        return given
    return in_flow_run() or configured_api_url() is not None


def run_job_as(
    job: Job,
    opts: Any,
    settings: Settings,
    *,
    prefect: bool,
    announce: Callable[[str], None] | None = None,
) -> Any:
    """Run a job: through its Prefect flow (a subflow inside a flow run; else a flow run of its own, as a
    deployment's worker runs it, its outcome read back: flows/prefect_job.py) when `prefect` and the job has
    one, else its plain runner; the job's Outcome. A flow's thread pool gets opts.transfers workers.
    announce: told where a flow run of its own is, before it starts (never for a subflow)."""
    if prefect and job.flow is not None:
        from prefect.task_runners import ThreadPoolTaskRunner

        from videoferry.flows.prefect_job import flow_params, run_flow

        flow = job.load(job.flow)
        transfers = getattr(opts, "transfers", None)
        if isinstance(transfers, int) and isinstance(flow.task_runner, ThreadPoolTaskRunner):
            flow = flow.with_options(task_runner=ThreadPoolTaskRunner(max_workers=max(1, transfers)))
        params = flow_params(flow, opts, settings)
        return run_flow(flow, params, job.load(job.outcome), None if in_flow_run() else announce)
    return job.load(job.runner)(opts, settings)
