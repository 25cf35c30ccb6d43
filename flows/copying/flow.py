"""A copying job's Prefect flow body (archive, backup): the options from the flow's parameters, the same plain
runner, its summary as a markdown artifact."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from prefect.artifacts import create_markdown_artifact

from connectors.config import Settings
from flows.job import CopyOutcome
from flows.options import options_from_params
from tasks.service import service_settings

__all__ = ["copy_flow_body"]

OptionsT = TypeVar("OptionsT")


def copy_flow_body(
    job: str,
    declaration: type[OptionsT],
    runner: Callable[[OptionsT, Settings], CopyOutcome],
    values: dict[str, Any],
    *,
    noun: str,
) -> CopyOutcome:
    """The flow's body: options from its parameters (the token never one: the environment's), the run, then
    the artifact videoferry-<job>-summary: counts by state, bytes copied, one line per failure."""
    opts, service = options_from_params(declaration, values)
    outcome = runner(opts, service_settings(api_url=service.api_url, upload_url=service.upload_url))
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or f"no {noun}"
    text = "\n".join(
        [f"# videoferry {job}", "", f"{counts}; {outcome.bytes} bytes copied", ""]
        + [f"- {line}" for line in outcome.reasons]
    )
    create_markdown_artifact(text, key=f"videoferry-{job}-summary", description=f"{job.capitalize()} summary")
    return outcome
