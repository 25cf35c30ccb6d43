"""`videoferry apply`: the command line of the apply job (its options: flows/apply/options.py)."""

from __future__ import annotations

import typer

from flows.apply.options import ApplyOptions
from flows.cli.app import add_command, job_command, run_command, show_outcome
from flows.options import ServiceOptions
from videoferry import jobs


def _apply(opts: ApplyOptions, service: ServiceOptions, prefect: bool) -> None:
    """Apply an operations file to the library: each operation exactly once, in dependency order."""
    outcome = run_command(jobs.apply, opts, service, prefect=prefect)
    if isinstance(outcome, jobs.Preview):
        for line in outcome.lines:
            typer.echo(line)
        raise typer.Exit(outcome.exit_code)
    show_outcome(outcome, outcome.totals())


def register(app: typer.Typer) -> None:
    """Add `apply` to the app."""
    add_command(app, "apply", job_command(ApplyOptions, _apply, flow=True))
