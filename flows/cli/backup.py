"""`videoferry backup`: the command line of the backup job (its options: flows/backup/options.py)."""

from __future__ import annotations

import typer

from flows.backup.options import BackupOptions
from flows.cli.app import add_command, job_command, run_command, show_outcome
from flows.options import ServiceOptions
from videoferry import jobs


def _backup(opts: BackupOptions, service: ServiceOptions, prefect: bool) -> None:
    """Back up every video of a project (file, metadata, poster) to S3 or a directory, with an inventory
    `videoferry migrate` restores from; only what is new or changed since the last run."""
    outcome = run_command(jobs.backup, opts, service, prefect=prefect)
    if isinstance(outcome, jobs.Preview):
        for line in outcome.lines:
            typer.echo(line)
        raise typer.Exit(outcome.exit_code)
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
    show_outcome(outcome, f"videos: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied")


def register(app: typer.Typer) -> None:
    """Add `backup` to the app."""
    add_command(app, "backup", job_command(BackupOptions, _backup, flow=True))
