"""The plain archive runner (no Prefect): select events, archive their recordings once each, report."""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta

from connectors.client import VideoClient
from connectors.config import Settings
from connectors.download import Downloader
from connectors.s3 import S3Config
from connectors.s3_multipart import DEFAULT_PART_SIZE, MIN_PART_SIZE
from flows.job import ConfigError, Outcome, Run, read_ledger, run_job
from state.machine import OpStatus
from tasks.archive.dest import open_destination
from tasks.archive.plan import (
    QUALITY_ORDER,
    Selection,
    choose_asset,
    event_recordings,
    select_events,
)
from tasks.archive.recording import TERMINAL_BAD, ArchiveContext, op_key
from tasks.archive.report import write_report
from tasks.archive.schedule import RESULT_STATES, archive_events

log = logging.getLogger(__name__)

__all__ = ["ArchiveOptions", "ArchiveOutcome", "run_archive", "preview_archive"]


@dataclass(frozen=True)
class ArchiveOptions:
    """What one archive run is asked to do (the command line's and the flow's parameters)."""

    to: str
    events: list[str] = field(default_factory=list)
    project: str | None = None
    since: str | None = None
    quality: str = "best"
    move_to: str | None = None
    tags: list[str] = field(default_factory=list)
    delete_after_archive: bool = False
    ledger: str = "videoferry-ledger.db"
    report_dir: str | None = None
    transfers: int = 2
    part_size: int = DEFAULT_PART_SIZE
    retry_backoff: float = 0.5

    def check(self) -> None:
        """Raise ConfigError (exit status 2) for options that cannot work."""
        if bool(self.events) == bool(self.project):
            raise ConfigError("give either --events ID,ID or --project ID")
        if self.quality != "best" and self.quality not in QUALITY_ORDER:
            raise ConfigError(f"--quality must be best or one of {', '.join(QUALITY_ORDER)}")
        if self.part_size < MIN_PART_SIZE:
            raise ConfigError(f"--part-size must be at least {MIN_PART_SIZE} bytes")
        if self.since is not None:
            parse_since(self.since)
        if not self.to or (self.to.startswith("s3://") and len(self.to) <= len("s3://")):
            raise ConfigError("--to needs s3://bucket/prefix/ or a directory")

    def selection(self) -> Selection:
        return Selection(
            event_ids=tuple(self.events),
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
        raise ConfigError(
            f"--since must be YYYY-MM-DD, an ISO 8601 time or 36h / 7d, not {text!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass
class ArchiveOutcome(Outcome):
    """How an archive run ended: exit status, failure lines, counts by state, bytes copied, report files."""

    counts: dict[str, int] = field(default_factory=dict)
    bytes: int = 0


def run_archive(opts: ArchiveOptions, settings: Settings, *, s3: S3Config | None = None) -> ArchiveOutcome:
    """Archive the recordings of the selected events, each step exactly once; the ledger keeps every step."""
    opts.check()
    dest = open_destination(opts.to, s3=s3 or S3Config.from_env(), part_size=opts.part_size)

    def body(run: Run) -> ArchiveOutcome:
        downloader = Downloader(settings.upload_url, timeout=max(60.0, settings.timeout))
        run.on_close(downloader.close)
        outcome = ArchiveOutcome(exit_code=1)
        run.summary = lambda: {"counts": outcome.counts, "bytes": outcome.bytes}
        ctx = ArchiveContext(
            ledger=run.ledger,
            run_id=run.run_id,
            client=run.client,
            dest=dest,
            downloader=downloader,
            quality=opts.quality,
            move_to=opts.move_target(),
            tags=tuple(opts.tags),
            delete_after=opts.delete_after_archive,
            backoff=opts.retry_backoff,
        )
        selection = opts.selection()
        events = select_events(run.client, selection)
        results = archive_events(ctx, events, transfers=opts.transfers, since=selection.since)
        counts = {state: sum(1 for r in results if r.state == state) for state in RESULT_STATES}
        failed = [r for r in results if r.state == "failed"]
        outcome = ArchiveOutcome(
            exit_code=1 if failed else 0,
            counts={k: v for k, v in counts.items() if v},
            reasons=[f"{r.event_id}/{r.stream_id}/{r.video_id}: {r.reason}" for r in failed],
            bytes=sum(r.bytes for r in results if r.state == "archived"),
        )
        if opts.report_dir:
            outcome.report_files = [str(p) for p in write_report(results, opts.report_dir)]
        return outcome

    return run_job("archive", asdict(opts), opts.ledger, settings, body)


def preview_archive(opts: ArchiveOptions, settings: Settings) -> list[str]:
    """--dry-run: one line per recording saying what a run would do; no write anywhere, no ledger run."""
    opts.check()
    lines = []
    with read_ledger(opts.ledger) as reader, VideoClient.from_settings(settings) as client:
        selection = opts.selection()
        for event in select_events(client, selection):
            for rec in event_recordings(client, event, selection.since):
                where = f"{rec.event_id}/{rec.stream_id}/{rec.video_id}"
                copied = reader is not None and any(
                    op.status == OpStatus.DONE for op in reader.ops(op_key=op_key(rec.video_id, "copy"))
                )
                if rec.video.status != "done":
                    verb = "skip" if rec.video.status in TERMINAL_BAD else "wait"
                    lines.append(f"{verb} {where}: recording is {rec.video.status}")
                elif copied:
                    lines.append(f"done {where}: already archived (tidy steps still due run again)")
                else:
                    asset = choose_asset(rec.video, opts.quality)
                    what = f"{asset.quality} {asset.file_size} bytes" if asset else "no downloadable asset"
                    lines.append(f"copy {where}: {what}")
    return lines
