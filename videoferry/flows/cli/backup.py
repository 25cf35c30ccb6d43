"""`videoferry backup`: the command line of the backup job (its options: flows/backup/options.py; its shape:
flows/cli/copying.py)."""

from __future__ import annotations

import typer

from videoferry import jobs
from videoferry.flows.backup.options import BackupOptions
from videoferry.flows.cli.app import add_command, job_command
from videoferry.flows.cli.copying import copy_handler


def register(app: typer.Typer) -> None:
    """Add `backup` to the app."""
    doc = """Back up every video of a project (file, metadata, poster) to S3 or a directory, with an inventory
    `videoferry migrate` restores from; only what is new or changed since the last run."""
    add_command(
        app, "backup", job_command(BackupOptions, copy_handler(jobs.backup, "videos", doc), flow=True)
    )
