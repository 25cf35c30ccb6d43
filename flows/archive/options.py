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
    transfers_option,
)

__all__ = ["DEFAULT_PART_MIB", "ArchiveOptions"]

if TYPE_CHECKING:
    from tasks.archive.plan import Selection


@dataclass(frozen=True)
class ArchiveOptions:
    """What one archive run is asked to do (the command line's options and the flow's parameters)."""

    to: str = destination_option()
    events: list[str] | None = field(
        default=None, metadata=about("Live event ids, comma separated.", Cli(commas=True, metavar="ID,ID"))
    )
    project: str | None = field(
        default=None, metadata=about("Every live event under this project.", Cli(metavar="ID"))
    )
    since: str | None = field(
        default=None,
        metadata=about(
            "Only events whose latest stream finished since: YYYY-MM-DD, an ISO time (UTC) or 36h / 7d ago.",
            Cli(metavar="WHEN"),
        ),
    )
    quality: str = field(
        default="best",
        metadata=about("best (original, else highest), original, 1080p...", Cli(metavar="QUALITY")),
    )
    move_to: str | None = field(
        default=None,
        metadata=about(
            "After a verified copy, move the recording to a project or a folder of it.",
            Cli(metavar="PROJECT[/FOLDER]"),
        ),
    )
    tags: list[str] | None = field(
        default=None,
        metadata=about(
            "After a verified copy, add these tags (comma separated).", Cli(commas=True, metavar="TAG,TAG")
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
        from tasks.archive.plan import QUALITY_ORDER

        if bool(self.events) == bool(self.project):
            raise ConfigError("give either --events ID,ID or --project ID")
        if self.quality != "best" and self.quality not in QUALITY_ORDER:
            raise ConfigError(f"--quality must be best or one of {', '.join(QUALITY_ORDER)}")
        check_copies(self.to, self.part_size, self.since, self.retry_backoff)

    def selection(self) -> Selection:
        """Which events: the ids given, else every event of the project; finished since --since."""
        from tasks.archive.plan import Selection

        return Selection(
            event_ids=tuple(self.events or ()),
            project_id=self.project,
            since=parse_since(self.since) if self.since else None,
        )

    def move_target(self) -> tuple[str, str | None] | None:
        """--move-to PROJECT_ID or PROJECT_ID/FOLDER_ID."""
        if not self.move_to:
            return None
        project, _, folder = self.move_to.partition("/")
        return project, folder or None
