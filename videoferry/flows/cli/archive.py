"""`videoferry archive`: the command line of the archive job (its options: flows/archive/options.py)."""

from __future__ import annotations

import typer

from videoferry.flows.archive.options import ArchiveOptions
from videoferry.flows.cli.app import (
    add_command,
    exit_on_errors,
    job_command,
    run_command,
    service_settings,
    show_outcome,
)
from videoferry.flows.options import ServiceOptions


def _archive(opts: ArchiveOptions, service: ServiceOptions, prefect: bool) -> None:
    """Archive the recordings of finished live events (video, chat, QoS, manifest), then tidy them."""
    from videoferry.flows.archive import ARCHIVE
    from videoferry.flows.archive.runner import preview_archive

    with exit_on_errors():
        settings = service_settings(service)
        if opts.dry_run:
            for line in preview_archive(opts, settings):
                typer.echo(line)
            raise typer.Exit(0)
        outcome = run_command(ARCHIVE, opts, settings, prefect=prefect)
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
    show_outcome(
        outcome, f"recordings: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied"
    )


def register(app: typer.Typer) -> None:
    """Add `archive` to the app."""
    add_command(app, "archive", job_command(ArchiveOptions, _archive, flow=True))
