"""The Prefect flow around run_check: the same runner, its findings (unplayable videos first) as artifacts."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import State

from videoferry.flows.check.options import CheckOptions
from videoferry.flows.check.runner import CheckOutcome, run_check
from videoferry.flows.options import DEFAULT_LEDGER, options_from_params
from videoferry.flows.prefect_job import job_flow, markdown_cell
from videoferry.tasks.check.compare import Mark
from videoferry.tasks.check.playable import PLAYABLE
from videoferry.tasks.check.report import summary_lines
from videoferry.tasks.service import service_settings

#: Rows of the findings table artifact (the report files have them all).
ARTIFACT_ROWS = 500


@flow(name="videoferry-check", log_prints=False)
def check_flow(
    inventory: str,
    ledger: str = DEFAULT_LEDGER,
    parent_id: str | None = None,
    parent_map: list[str] | None = None,
    download_md5: bool = False,
    combined: str | None = None,
    one_way: bool = False,
    playable: bool = False,
    report_dir: str | None = None,
    adopt: bool = False,
    reupload_unproven: bool = False,
    rewrite_differing: bool = False,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Check the library in the service against an inventory (a path, s3:// or a platform source) and its
    ledger, like `videoferry check`; with playable, also prove that every migrated video plays.

    The parameters are CheckOptions' fields (flows/check/options.py), then the service's addresses (None
    reads VIDEOFERRY_API_URL / VIDEOFERRY_UPLOAD_URL); the token is VIDEOFERRY_TOKEN (or the Secret block
    VIDEOFERRY_TOKEN_BLOCK names), never a parameter. A finding (exit status 1: a video missing, differing
    or not playable) ends the run Failed (flows/prefect_job.flow_tail), its findings in the artifacts.
    """
    values = dict(locals())  # first: locals() is the parameters
    return job_flow(lambda: _check(values), CheckOutcome)


def _check(values: dict[str, Any]) -> CheckOutcome:
    """The check flow's body: the options from its parameters, the check, its artifacts."""
    opts, service = options_from_params(CheckOptions, values)
    outcome = run_check(opts, service_settings(api_url=service.api_url, upload_url=service.upload_url))
    artifacts(outcome)
    return outcome


def artifacts(outcome: CheckOutcome) -> None:
    """A table of the findings (every line that is not `=` or `~`: key, title, video, fields, why; the
    videos that do not play first) and a markdown summary naming the unplayable videos. No source URL is
    in a line (CheckLine.report_row), so no signed link or token."""
    findings = [line for line in outcome.lines if line.mark not in (Mark.SAME, Mark.EXPLAINED)]
    findings.sort(key=lambda line: PLAYABLE not in line.fields)
    if findings:
        rows = [line.report_row() for line in findings[:ARTIFACT_ROWS]]
        create_table_artifact(rows, key="videoferry-check-findings", description="Check findings")
    unplayable = [line for line in findings if PLAYABLE in line.fields]
    text = ["# videoferry check", "", *(f"- {line}" for line in summary_lines(outcome.summary))]
    if unplayable:
        text += ["", f"## {len(unplayable)} migrated video(s) do not play", ""]
        text += ["| key | title | video | why |", "|---|---|---|---|"]
        for line in unplayable[:ARTIFACT_ROWS]:
            cells = (line.key or "", line.title or "", line.video_id or "", line.note)
            text.append("| " + " | ".join(markdown_cell(c) for c in cells) + " |")
    create_markdown_artifact("\n".join(text), key="videoferry-check-summary", description="Check summary")
