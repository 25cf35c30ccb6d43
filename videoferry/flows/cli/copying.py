"""The shape of a copying job's command (`videoferry archive`, `videoferry backup`): --dry-run's preview or
the run, then its totals line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from videoferry.flows.cli.app import run_command, show_outcome, show_preview
from videoferry.flows.options import ServiceOptions

__all__ = ["copy_handler"]


def copy_handler(
    api: Callable[..., Any], noun: str, doc: str
) -> Callable[[Any, ServiceOptions, bool], None]:
    """The handler flows/cli/app.job_command runs for a copying job (its help: doc): the job's
    videoferry.jobs function (`api`) called as the Python API calls it; with --dry-run its Preview's lines,
    else the run (through Prefect or not), its lines and `<noun>: N (counts), B bytes copied`."""

    def handler(opts: Any, service: ServiceOptions, prefect: bool) -> None:
        from videoferry import jobs

        outcome = run_command(api, opts, service, prefect=prefect)
        if isinstance(outcome, jobs.Preview):
            show_preview(outcome)
        counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
        show_outcome(
            outcome, f"{noun}: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied"
        )

    handler.__doc__ = doc
    return handler
