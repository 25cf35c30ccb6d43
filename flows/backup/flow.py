"""The Prefect flow around run_backup: the same runner, its summary as a Prefect artifact
(flows/copying/flow.py)."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.states import State

from flows.backup.options import DEFAULT_PART_MIB, BackupOptions
from flows.backup.runner import run_backup
from flows.copying.flow import copy_flow_body
from flows.job import CopyOutcome
from flows.options import DEFAULT_LEDGER, MIB
from flows.prefect_job import job_flow


@flow(name="videoferry-backup", log_prints=False)
def backup_flow(
    project: str,
    to: str,
    folder: str | None = None,
    since: str | None = None,
    prune: bool = False,
    ledger: str = DEFAULT_LEDGER,
    report_dir: str | None = None,
    transfers: int = 2,
    part_size: int = DEFAULT_PART_MIB * MIB,
    retry_backoff: float = 0.5,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Back up every video of `project` (or of `folder`) into `to` (s3://bucket/prefix/ or a directory).

    The parameters are BackupOptions' flow fields (flows/backup/options.py), then the service's
    {base_url} / {upload_url} (None reads VIDEOFERRY_API_URL / VIDEOFERRY_UPLOAD_URL). The token comes from
    VIDEOFERRY_TOKEN or the Secret block VIDEOFERRY_TOKEN_BLOCK names, never from a parameter. A run with a
    failed video (exit status 1) ends as a Failed flow run (flows/prefect_job.flow_tail), a nightly run shows
    red.
    """
    values = dict(locals())  # first: locals() holds the parameters
    return job_flow(lambda: _backup(values), CopyOutcome)


def _backup(values: dict[str, Any]) -> CopyOutcome:
    return copy_flow_body("backup", BackupOptions, run_backup, values, noun="videos")
