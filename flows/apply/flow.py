"""The Prefect flow around run_apply: the same runner, its results as Prefect artifacts."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Failed, State

from connectors.config import Settings
from flows.apply.runner import ApplyOptions, run_apply

#: Rows of the table artifact (the full table is in the report files).
ARTIFACT_ROWS = 500


@flow(name="videoferry-apply", log_prints=False)
def apply_flow(
    ops: str,
    ledger: str = "videoferry-ledger.db",
    transfers: int = 4,
    allow_delete: bool = False,
    report_dir: str | None = None,
    poll_interval: float = 5.0,
    wait_timeout: float = 3600.0,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Apply an operations file (a path or s3://); per-unit truth is in the ledger, not in Prefect.

    The parameters are ApplyOptions' fields, then the service's {base_url} / {upload_url} (None reads
    VIDEOFERRY_API_URL / VIDEOFERRY_UPLOAD_URL). The token comes from VIDEOFERRY_TOKEN in the environment
    running the flow, never from a parameter. A run that did not do everything (exit status 1 or 2) ends
    as a Failed flow run whose data is the same dict (`state.result(raise_on_failure=False)`), so a
    nightly deployment shows red in the UI when an operation failed.
    """
    logger = get_run_logger()
    opts = ApplyOptions(
        ops=ops,
        ledger=ledger,
        transfers=transfers,
        allow_delete=allow_delete,
        report_dir=report_dir,
        poll_interval=poll_interval,
        wait_timeout=wait_timeout,
    )
    outcome = run_apply(opts, Settings.from_env(api_url=api_url, upload_url=upload_url))
    _artifacts(opts.ledger, outcome.counts, [*outcome.refused, *outcome.reasons])
    for line in [*outcome.refused, *outcome.reasons]:
        logger.info(line)
    if outcome.exit_code != 0:
        first = (outcome.reasons or outcome.refused or ["not every operation is done"])[0].strip()
        return Failed(message=f"exit status {outcome.exit_code}: {first}", data=outcome.as_dict())
    return outcome.as_dict()


def _artifacts(ledger_path: str, counts: dict[str, int], lines: list[str]) -> None:
    """A table of the units (secret-free report rows) and a markdown summary."""
    from state.ledger import Ledger

    ledger = Ledger.open(ledger_path, create=False)
    try:
        rows = [u.report_row() for u in ledger.units()][:ARTIFACT_ROWS]
    finally:
        ledger.close()
    if rows:
        create_table_artifact(rows, key="videoferry-operations", description="Operations (first 500 units)")
    text = "\n".join(
        ["# videoferry apply", "", ", ".join(f"{n} {s}" for s, n in counts.items()) or "no operations", ""]
        + [f"- {line.strip()}" for line in lines]
    )
    create_markdown_artifact(text, key="videoferry-apply-summary", description="Apply summary")
