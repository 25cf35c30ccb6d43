"""The archive options, declared once: the command line, the runner, the flow and prefect.yaml follow them."""

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

__all__ = ["DEFAULT_PART_MIB", "ArchiveOptions"]

if TYPE_CHECKING:
    from tasks.archive.events import EventSelection


@dataclass(frozen=True)
class ArchiveOptions:
    """What one archive run is asked to do (the command line's options and the flow's parameters)."""

    to: str = destination_option()
    events: list[str] | None = field(
        default=None,
        metadata=about(
            "These live events (ids, comma-separated or repeated).",
            Cli(flag="--event-ids", commas=True, metavar="ID,ID", aliases=("--events",)),
        ),
    )
    project: str | None = field(
        default=None,
        metadata=about(
            "Every live event under this project.",
            Cli(flag="--project-id", metavar="ID", aliases=("--project",)),
        ),
    )
    since: str | None = since_option("Only events whose latest stream finished since WHEN")
    quality: str = field(
        default="best",
        metadata=about("best (original, else highest), original, 1080p...", Cli(metavar="QUALITY")),
    )
    move_to: str | None = field(
        default=None,
        metadata=about(
            "After a verified copy, move the recording to this project.",
            # --move-to PROJECT_ID[/FOLDER_ID]: the old form, still taken (move_target()).
            Cli(flag="--move-to-project-id", metavar="ID", aliases=("--move-to",)),
        ),
    )
    move_to_folder: str | None = field(
        default=None,
        metadata=about(
            "With --move-to-project-id: into this folder of that project.",
            Cli(flag="--move-to-folder-id", metavar="ID"),
        ),
    )
    tags: list[str] | None = field(
        default=None,
        metadata=about(
            "After a verified copy, add these tags (comma-separated or repeated).",
            Cli(commas=True, metavar="TAG,TAG"),
        ),
    )
    delete_after_archive: bool = field(
        default=False, metadata=about("Delete each recording from the service once its archive is verified.")
    )
    ledger: str = ledger_option()
    report_dir: str | None = report_option("Write archive.csv, .parquet, .json and .html here.")
    transfers: int = transfers_option(2, "Recordings copied at once.")
    part_size: int = part_size_option()
    retry_backoff: float = retry_backoff_option()
    dry_run: bool = dry_run_option("Print what would be archived; write nothing.")

    def check(self) -> None:
        """Raise ConfigError (exit status 2) for options that cannot work."""
        from tasks.assets import QUALITY_ORDER

        if bool(self.events) == bool(self.project):
            raise ConfigError("give either --event-ids ID,ID or --project-id ID")
        if self.move_to_folder and not self.move_to:
            raise ConfigError("--move-to-folder-id needs --move-to-project-id (the folder's project)")
        if self.move_to_folder and self.move_to and "/" in self.move_to:
            raise ConfigError(
                f"--move-to-project-id {self.move_to!r} names a folder already (PROJECT/FOLDER)"
            )
        if self.quality != "best" and self.quality not in QUALITY_ORDER:
            raise ConfigError(f"--quality must be best or one of {', '.join(QUALITY_ORDER)}")
        check_copies(self.to, self.part_size, self.since, self.retry_backoff)

    def selection(self) -> EventSelection:
        """Which events: the ids given, else every event of the project; finished since --since."""
        from tasks.archive.events import EventSelection

        return EventSelection(
            event_ids=tuple(self.events or ()),
            project_id=self.project,
            since=parse_since(self.since) if self.since else None,
        )

    def move_target(self) -> tuple[str, str | None] | None:
        """Where recordings move: --move-to-project-id ID [--move-to-folder-id ID], or the old single value
        PROJECT_ID[/FOLDER_ID] (--move-to; prefect.yaml's move_to)."""
        if not self.move_to:
            return None
        project, _, folder = self.move_to.partition("/")
        return project, self.move_to_folder or folder or None
