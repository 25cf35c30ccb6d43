"""`videoferry archive`: the command line of the archive job (its options: flows/archive/options.py; its
shape: flows/cli/copying.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from flows.archive.options import ArchiveOptions
from flows.cli.app import add_command, job_command
from flows.cli.copying import copy_handler

if TYPE_CHECKING:
    from flows.job import Job


def _job() -> Job:
    from flows.archive import ARCHIVE

    return ARCHIVE


def _preview() -> Any:
    from flows.archive.runner import preview_archive

    return preview_archive


def register(app: typer.Typer) -> None:
    """Add `archive` to the app."""
    doc = "Archive the recordings of finished live events (video, chat, QoS, manifest), then tidy them."
    add_command(
        app,
        "archive",
        job_command(ArchiveOptions, copy_handler(_job, _preview, "recordings", doc), flow=True),
    )
