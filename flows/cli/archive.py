"""`videoferry archive`: the command line of the archive job (its options: flows/archive/options.py)."""

from __future__ import annotations

import typer

from flows.archive.options import ArchiveOptions
from flows.cli.app import add_command, job_command, run_command, show_outcome
from flows.options import ServiceOptions
from videoferry import jobs


def _archive(opts: ArchiveOptions, service: ServiceOptions, prefect: bool) -> None:
    """Archive the recordings of finished live events (video, chat, QoS, manifest), then tidy them."""
    outcome = run_command(jobs.archive, opts, service, prefect=prefect)
    if isinstance(outcome, jobs.Preview):
        for line in outcome.lines:
            typer.echo(line)
        raise typer.Exit(outcome.exit_code)
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
    show_outcome(
        outcome, f"recordings: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied"
    )


def register(app: typer.Typer) -> None:
    """Add `archive` to the app."""
    add_command(app, "archive", job_command(ArchiveOptions, _archive, flow=True))
