"""The Prefect flows around the setup runner: plan, up and the nightly drift check, results as artifacts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import State

from videoferry.connectors.config import Settings
from videoferry.flows.options import DEFAULT_LEDGER, ServiceOptions, options_from_params
from videoferry.flows.prefect_job import job_flow
from videoferry.flows.setup.options import SetupOptions
from videoferry.flows.setup.runner import SetupOutcome, run_drift, run_plan, run_up
from videoferry.tasks.service import service_settings


def _finish(kind: str, values: dict[str, Any], run: Callable[[SetupOptions, Settings], SetupOutcome]) -> Any:
    """The setup flow's body through job_flow: the options, the run, its artifacts (the plan's rows and lines:
    never a secret); Failed on exit status 1 or 2."""

    def body() -> SetupOutcome:
        opts, service = options_from_params(SetupOptions, values)
        return _artifacts(kind, run(opts, _settings(service)))

    return job_flow(body, SetupOutcome)


def _artifacts(kind: str, outcome: SetupOutcome) -> SetupOutcome:
    if outcome.rows:
        rows = [{**r, "fields": ", ".join(r["fields"])} for r in outcome.rows]
        create_table_artifact(rows, key=f"videoferry-setup-{kind}", description=f"setup {kind}: per object")
    body = "\n".join(["```", *outcome.lines, "```"])
    create_markdown_artifact(body, key=f"videoferry-setup-{kind}-summary", description=f"setup {kind}")
    return outcome


def _settings(service: ServiceOptions) -> Settings:
    return service_settings(api_url=service.api_url, upload_url=service.upload_url)


@flow(name="videoferry-setup-plan", log_prints=False)
def setup_plan_flow(
    file: str,
    ledger: str = DEFAULT_LEDGER,
    prune: bool = False,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """What setup up would change (GET calls only); the token is VIDEOFERRY_TOKEN, never a parameter."""
    return _finish("plan", dict(locals()), run_plan)  # first: locals() is the parameters


@flow(name="videoferry-setup-up", log_prints=False)
def setup_up_flow(
    file: str,
    ledger: str = DEFAULT_LEDGER,
    prune: bool = False,
    outputs: str = "setup-outputs",
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Make the service match the file, each write exactly once; outputs (keys, codes) only to files/S3."""
    return _finish("up", dict(locals()), run_up)  # first: locals() is the parameters


@flow(name="videoferry-setup-drift", log_prints=False)
def setup_drift_flow(
    file: str,
    ledger: str = DEFAULT_LEDGER,
    prune: bool = False,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """The nightly check: a Failed run (exit status 1) when the service differs from the file."""
    return _finish("drift", dict(locals()), run_drift)  # first: locals() is the parameters
