"""`videoferry archive`: the command line of the archive job (its options: flows/archive/options.py; its
shape: flows/cli/copying.py)."""

from __future__ import annotations

import typer

from videoferry import jobs
from videoferry.flows.archive.options import ArchiveOptions
from videoferry.flows.cli.app import add_command, job_command
from videoferry.flows.cli.copying import copy_handler


def register(app: typer.Typer) -> None:
    """Add `archive` to the app."""
    doc = "Archive the recordings of finished live events (video, chat, QoS, manifest), then tidy them."
    add_command(
        app,
        "archive",
        job_command(ArchiveOptions, copy_handler(jobs.archive, "recordings", doc), flow=True),
    )
