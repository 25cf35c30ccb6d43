"""`videoferry backup`: the command line of the backup job (its options: flows/backup/options.py; its shape:
flows/cli/copying.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from flows.backup.options import BackupOptions
from flows.cli.app import add_command, job_command
from flows.cli.copying import copy_handler

if TYPE_CHECKING:
    from flows.job import Job


def _job() -> Job:
    from flows.backup import BACKUP

    return BACKUP


def _preview() -> Any:
    from flows.backup.runner import preview_backup

    return preview_backup


def register(app: typer.Typer) -> None:
    """Add `backup` to the app."""
    doc = """Back up every video of a project (file, metadata, poster) to S3 or a directory, with an inventory
    `videoferry migrate` restores from; only what is new or changed since the last run."""
    add_command(
        app, "backup", job_command(BackupOptions, copy_handler(_job, _preview, "videos", doc), flow=True)
    )
