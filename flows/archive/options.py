"""The archive options, declared once: the command line, the runner, the flow and prefect.yaml follow them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from connectors.config import ConfigError
from flows.options import MIB, Cli, about, dry_run_option, ledger_option, report_option, transfers_option

if TYPE_CHECKING:
    from tasks.archive.plan import Selection

#: S3 multipart parts: 8 MiB by default, at least 5 MiB (S3's own minimum; connectors/s3_multipart.py).
DEFAULT_PART_MIB = 8
MIN_PART_MIB = 5


@dataclass(frozen=True)
class ArchiveOptions:
    """What one archive run is asked to do (the command line's options and the flow's parameters)."""

    to: str = field(
        metadata=about(
            "Destination: s3://bucket/prefix/ or a local directory.",
            Cli(flag="--to", metavar="s3://BUCKET/PREFIX/|DIR"),
        )
    )
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
    part_size: int = field(
        default=DEFAULT_PART_MIB * MIB,
        metadata=about(
            f"S3 multipart part size in MiB (at least {MIN_PART_MIB}).",
            Cli(name="part_mib", unit=MIB, min=MIN_PART_MIB, metavar="MIB"),
        ),
    )
    retry_backoff: float = field(
        default=0.5,
        metadata=about("Seconds before a copy's first retry (doubled each time).", command_line=False),
    )
    dry_run: bool = dry_run_option("Print what would be archived; write nothing.")

    def check(self) -> None:
        """Raise ConfigError (exit status 2) for options that cannot work."""
        from connectors.s3_multipart import MIN_PART_SIZE
        from tasks.archive.plan import QUALITY_ORDER

        if bool(self.events) == bool(self.project):
            raise ConfigError("give either --events ID,ID or --project ID")
        if self.quality != "best" and self.quality not in QUALITY_ORDER:
            raise ConfigError(f"--quality must be best or one of {', '.join(QUALITY_ORDER)}")
        if self.part_size < MIN_PART_SIZE:
            raise ConfigError(f"--part-mib must be at least {MIN_PART_SIZE // MIB}")
        if self.since is not None:
            parse_since(self.since)
        if not self.to or (self.to.startswith("s3://") and len(self.to) <= len("s3://")):
            raise ConfigError("--to needs s3://bucket/prefix/ or a directory")

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


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """YYYY-MM-DD (midnight UTC), an ISO 8601 moment (naive = UTC), or a look-back such as 36h or 7d."""
    back = re.fullmatch(r"(\d+)([hd])", text.strip())
    if back:
        amount = int(back.group(1))
        delta = timedelta(hours=amount) if back.group(2) == "h" else timedelta(days=amount)
        return (now or datetime.now(UTC)) - delta
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--since must be YYYY-MM-DD, an ISO 8601 time or 36h / 7d, not {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
