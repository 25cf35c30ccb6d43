"""`videoferry apply`: the command line of the apply job (its options: flows/apply/options.py)."""

from __future__ import annotations

import typer

from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.cli.app import (
    add_command,
    exit_on_errors,
    job_command,
    run_command,
    service_settings,
    show_outcome,
)
from videoferry.flows.options import ServiceOptions


def _apply(opts: ApplyOptions, service: ServiceOptions, prefect: bool) -> None:
    """Apply an operations file to the library: each operation exactly once, in dependency order."""
    from videoferry.flows.apply import APPLY
    from videoferry.flows.apply.runner import preview_apply

    with exit_on_errors():
        settings = service_settings(service)
        if opts.dry_run:
            plan = preview_apply(opts, settings)
            for line in plan.lines(allow_delete=opts.allow_delete):
                typer.echo(line)
            raise typer.Exit(plan.exit_code)
        outcome = run_command(APPLY, opts, settings, prefect=prefect)
    show_outcome(outcome, outcome.totals())


def register(app: typer.Typer) -> None:
    """Add `apply` to the app."""
    add_command(app, "apply", job_command(ApplyOptions, _apply, flow=True))
