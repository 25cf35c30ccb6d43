"""The backup options, declared once: the command line, the runner, the flow and prefect.yaml follow them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from connectors.config import ConfigError
from flows.options import (
    DEFAULT_PART_MIB,
    Cli,
    about,
    check_copies,
    destination_option,
    dry_run_option,
    ledger_option,
    parse_since,
    part_size_option,
    report_option,
    retry_backoff_option,
    since_option,
    transfers_option,
)

__all__ = ["DEFAULT_PART_MIB", "BackupOptions"]

if TYPE_CHECKING:
    from tasks.backup.listing import VideoSelection


@dataclass(frozen=True)
class BackupOptions:
    """What one backup run is asked to do (the command line's options and the flow's parameters)."""

    project: str = field(
        metadata=about(
            "The project whose videos are backed up (any id notation).",
            Cli(flag="--project-id", metavar="ID", aliases=("--project",)),
        )
    )
    to: str = destination_option()
    folder: str | None = field(
        default=None,
        metadata=about(
            "Only the videos of this folder of the project.",
            Cli(flag="--folder-id", metavar="ID", aliases=("--folder",)),
        ),
    )
    since: str | None = since_option(
        "Only read videos made or changed since WHEN (the others keep what the backup holds)"
    )
    prune: bool = field(
        default=False,
        metadata=about(
            "Remove from the backup the files of videos deleted in the service (kept and marked otherwise)."
        ),
    )
    ledger: str = ledger_option()
    report_dir: str | None = report_option("Write backup.csv, .parquet, .json and .html into this directory.")
    transfers: int = transfers_option(2, "Videos copied at once.")
    part_size: int = part_size_option()
    retry_backoff: float = retry_backoff_option()
    dry_run: bool = dry_run_option("Print what would be backed up; write nothing, read the list only.")

    def check(self) -> None:
        """Raise ConfigError (exit status 2) for options that cannot work."""
        from connectors.ids import normal_id

        for flag, value in (("--project-id", self.project), ("--folder-id", self.folder)):
            if value is None:
                continue
            try:
                normal_id(value)
            except ValueError as exc:
                raise ConfigError(f"{flag}: {exc}") from None
        check_copies(self.to, self.part_size, self.since, self.retry_backoff)

    def selection(self) -> VideoSelection:
        """Which videos: the project's (or the folder's); made or changed since --since."""
        from connectors.ids import normal_id
        from tasks.backup.listing import VideoSelection

        return VideoSelection(
            project_id=normal_id(self.project),
            folder_id=normal_id(self.folder) if self.folder else None,
            since=parse_since(self.since) if self.since else None,
        )
