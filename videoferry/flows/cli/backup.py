"""`videoferry backup`: the command line of the backup job (its options: flows/backup/options.py)."""

from __future__ import annotations

import typer

from videoferry.flows.backup.options import BackupOptions
from videoferry.flows.cli.app import (
    add_command,
    exit_on_errors,
    job_command,
    run_command,
    service_settings,
    show_outcome,
)
from videoferry.flows.options import ServiceOptions


def _backup(opts: BackupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Back up every video of a project (file, metadata, poster) to S3 or a directory, with an inventory
    `videoferry migrate` restores from; only what is new or changed since the last run."""
    from videoferry.flows.backup import BACKUP
    from videoferry.flows.backup.runner import preview_backup

    with exit_on_errors():
        settings = service_settings(service)
        if opts.dry_run:
            for line in preview_backup(opts, settings):
                typer.echo(line)
            raise typer.Exit(0)
        outcome = run_command(BACKUP, opts, settings, prefect=prefect)
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
    show_outcome(outcome, f"videos: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied")


def register(app: typer.Typer) -> None:
    """Add `backup` to the app."""
    add_command(app, "backup", job_command(BackupOptions, _backup, flow=True))
