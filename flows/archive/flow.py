"""The Prefect flow around run_archive: the same runner, its summary as a Prefect artifact
(flows/copying/flow.py)."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.states import State

from flows.archive.options import DEFAULT_PART_MIB, ArchiveOptions
from flows.archive.runner import run_archive
from flows.copying.flow import copy_flow_body
from flows.job import CopyOutcome
from flows.options import DEFAULT_LEDGER, MIB
from flows.prefect_job import job_flow


@flow(name="videoferry-archive", log_prints=False)
def archive_flow(
    to: str,
    events: list[str] | None = None,
    project: str | None = None,
    since: str | None = None,
    quality: str = "best",
    move_to: str | None = None,
    move_to_folder: str | None = None,
    tags: list[str] | None = None,
    delete_after_archive: bool = False,
    ledger: str = DEFAULT_LEDGER,
    report_dir: str | None = None,
    transfers: int = 2,
    part_size: int = DEFAULT_PART_MIB * MIB,
    retry_backoff: float = 0.5,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Archive the recordings of finished live events into `to` (s3://bucket/prefix/ or a directory).

    The parameters are ArchiveOptions' flow fields (flows/archive/options.py), then the service's {base_url} /
    {upload_url} (None reads
    VIDEOFERRY_API_URL / VIDEOFERRY_UPLOAD_URL). The token comes from VIDEOFERRY_TOKEN in the environment
    running the flow, never from a parameter. A run with a failed recording (exit status 1) ends as a Failed
    flow run (flows/prefect_job.flow_tail), so a nightly deployment shows red.
    """
    values = dict(locals())  # first: locals() holds the parameters
    return job_flow(lambda: _archive(values), CopyOutcome)


def _archive(values: dict[str, Any]) -> CopyOutcome:
    return copy_flow_body("archive", ArchiveOptions, run_archive, values, noun="recordings")
