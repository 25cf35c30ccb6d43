"""The Prefect flow around run_apply: the same runner, its results as Prefect artifacts."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import State

from videoferry.connectors.config import DEFAULT_CHUNK_SIZE
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import ApplyOutcome, run_apply
from videoferry.flows.options import DEFAULT_LEDGER, DEFAULT_WAIT_TIMEOUT, options_from_params
from videoferry.flows.prefect_job import job_flow
from videoferry.tasks.service import service_settings

#: Rows of the table artifact (the full table is in the report files).
ARTIFACT_ROWS = 500


@flow(name="videoferry-apply", log_prints=False)
def apply_flow(
    ops: str,
    ledger: str = DEFAULT_LEDGER,
    transfers: int = 4,
    allow_delete: bool = False,
    report_dir: str | None = None,
    poll_interval: float = 5.0,
    wait_timeout: float | None = DEFAULT_WAIT_TIMEOUT,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Apply an operations file (a path or s3://); per-unit truth is in the ledger, not in Prefect.

    The parameters are ApplyOptions' flow fields (flows/apply/options.py), then the service's {base_url} /
    {upload_url} (None reads
    VIDEOFERRY_API_URL / VIDEOFERRY_UPLOAD_URL). The token comes from VIDEOFERRY_TOKEN in the environment
    running the flow, never from a parameter. A run that did not do everything (exit status 1 or 2) ends
    as a Failed flow run (flows/prefect_job.flow_tail), so a nightly deployment shows red when an operation
    failed.
    """
    values = dict(locals())  # first: locals() is the parameters
    return job_flow(lambda: _apply(values), ApplyOutcome)


def _apply(values: dict[str, Any]) -> ApplyOutcome:
    """The apply flow's body: the options from its parameters, the run, its artifacts."""
    opts, service = options_from_params(ApplyOptions, values)
    outcome = run_apply(opts, service_settings(api_url=service.api_url, upload_url=service.upload_url))
    _artifacts(opts.ledger, outcome)
    return outcome


def _artifacts(ledger_path: str, outcome: ApplyOutcome) -> None:
    """A table of the units (secret-free report rows) and a markdown summary."""
    from videoferry.flows.job import read_ledger

    with read_ledger(ledger_path) as ledger:
        rows = [u.report_row() for u in ledger.units()][:ARTIFACT_ROWS] if ledger is not None else []
    if rows:
        create_table_artifact(rows, key="videoferry-operations", description="Operations (first 500 units)")
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "no operations"
    lines = [f"- {line.strip()}" for line in outcome.log_lines()]
    text = "\n".join(["# videoferry apply", "", counts, "", *lines])
    create_markdown_artifact(text, key="videoferry-apply-summary", description="Apply summary")
