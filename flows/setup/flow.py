"""The Prefect flows around the setup runner: plan, up and the nightly drift check, results as artifacts."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import State

from connectors.config import Settings
from flows.options import DEFAULT_LEDGER, ServiceOptions, options_from_params
from flows.prefect_job import flow_tail
from flows.setup.options import SetupOptions
from flows.setup.runner import SetupOutcome, run_drift, run_plan, run_up
from tasks.service import service_settings


def _finish(kind: str, outcome: SetupOutcome) -> dict[str, Any] | State[Any]:
    """Artifacts (the plan's rows and lines: never a secret), then the flow's tail (Failed: exit 1 or 2)."""
    if outcome.rows:
        rows = [{**r, "fields": ", ".join(r["fields"])} for r in outcome.rows]
        create_table_artifact(rows, key=f"videoferry-setup-{kind}", description=f"setup {kind}: per object")
    body = "\n".join(["```", *outcome.lines, "```"])
    create_markdown_artifact(body, key=f"videoferry-setup-{kind}-summary", description=f"setup {kind}")
    return flow_tail(outcome)


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
    opts, service = options_from_params(SetupOptions, dict(locals()))  # first: locals() is the parameters
    return _finish("plan", run_plan(opts, _settings(service)))


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
    opts, service = options_from_params(SetupOptions, dict(locals()))  # first: locals() is the parameters
    return _finish("up", run_up(opts, _settings(service)))


@flow(name="videoferry-setup-drift", log_prints=False)
def setup_drift_flow(
    file: str,
    ledger: str = DEFAULT_LEDGER,
    prune: bool = False,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """The nightly check: a Failed run (exit status 1) when the service differs from the file."""
    opts, service = options_from_params(SetupOptions, dict(locals()))  # first: locals() is the parameters
    return _finish("drift", run_drift(opts, _settings(service)))
