"""The backup options, declared once: the command line, the runner, the flow and prefect.yaml follow them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from connectors.config import ConfigError
from flows.options import (
    MIB,
    Cli,
    about,
    dry_run_option,
    ledger_option,
    parse_since,
    report_option,
    transfers_option,
)

if TYPE_CHECKING:
    from tasks.backup.plan import Selection

#: S3 multipart parts: 8 MiB by default, at least 5 MiB (S3's own minimum; connectors/s3_multipart.py).
DEFAULT_PART_MIB = 8


@dataclass(frozen=True)
class BackupOptions:
    """What one backup run is asked to do (the command line's options and the flow's parameters)."""

    project: str = field(metadata=about("The project whose videos are backed up (any id notation)."))
    to: str = field(
        metadata=about("Destination: s3://bucket/prefix/ or a local directory.", Cli(flag="--to"))
    )
    folder: str | None = field(default=None, metadata=about("Only the videos of this folder of the project."))
    since: str | None = field(
        default=None,
        metadata=about(
            "Only read videos made or changed since: YYYY-MM-DD, an ISO time (UTC) or 36h / 7d ago "
            "(the others keep what the backup holds)."
        ),
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
    part_size: int = field(
        default=DEFAULT_PART_MIB * MIB,
        metadata=about("S3 multipart part size in MiB (at least 5).", Cli(name="part_mib", unit=MIB, min=5)),
    )
    retry_backoff: float = field(
        default=0.5,
        metadata=about("Seconds before a copy's first retry (doubled each time).", command_line=False),
    )
    dry_run: bool = dry_run_option("Print what would be backed up; write nothing, read the list only.")

    def check(self) -> None:
        """Raise ConfigError (exit status 2) for options that cannot work."""
        from connectors.ids import normal_id
        from connectors.s3_multipart import MIN_PART_SIZE

        for flag, value in (("--project", self.project), ("--folder", self.folder)):
            if value is None:
                continue
            try:
                normal_id(value)
            except ValueError as exc:
                raise ConfigError(f"{flag}: {exc}") from None
        if self.part_size < MIN_PART_SIZE:
            raise ConfigError(f"--part-mib must be at least {MIN_PART_SIZE // MIB}")
        if self.since is not None:
            parse_since(self.since)
        if not self.to or (self.to.startswith("s3://") and len(self.to) <= len("s3://")):
            raise ConfigError("--to needs s3://bucket/prefix/ or a directory")

    def selection(self) -> Selection:
        """Which videos: the project's (or the folder's); made or changed since --since."""
        from connectors.ids import normal_id
        from tasks.backup.plan import Selection

        return Selection(
            project_id=normal_id(self.project),
            folder_id=normal_id(self.folder) if self.folder else None,
            since=parse_since(self.since) if self.since else None,
        )
