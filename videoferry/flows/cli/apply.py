"""`videoferry apply`: the command line of the apply job (its options: flows/apply/options.py)."""

from __future__ import annotations

import typer

from videoferry import jobs
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.cli.app import add_command, job_command, run_command, show_outcome, show_preview
from videoferry.flows.options import ServiceOptions


def _apply(opts: ApplyOptions, service: ServiceOptions, prefect: bool) -> None:
    """Apply an operations file to the library: each operation exactly once, in dependency order."""
    outcome = run_command(jobs.apply, opts, service, prefect=prefect)
    if isinstance(outcome, jobs.Preview):
        show_preview(outcome)
    show_outcome(outcome, outcome.totals())


def register(app: typer.Typer) -> None:
    """Add `apply` to the app."""
    add_command(app, "apply", job_command(ApplyOptions, _apply, flow=True))
