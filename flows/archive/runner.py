"""The plain archive runner (no Prefect): select events, archive their recordings once each, report."""

from __future__ import annotations

from connectors.config import Settings
from connectors.s3 import S3Config
from flows.archive.options import ArchiveOptions
from flows.copying.runner import Copying, Tally, run_copying, tally
from flows.job import CopyOutcome, read_ledger
from state.machine import OpStatus
from tasks.archive.events import event_recordings, select_events
from tasks.archive.recording import TERMINAL_BAD, ArchiveContext, op_key
from tasks.archive.report import RUN_COLUMNS
from tasks.archive.schedule import RESULT_STATES, archive_events
from tasks.assets import choose_asset
from tasks.service import preview_client

__all__ = ["run_archive", "preview_archive"]


def run_archive(opts: ArchiveOptions, settings: Settings, *, s3: S3Config | None = None) -> CopyOutcome:
    """Archive the recordings of the selected events, each step exactly once; the ledger keeps every step
    (the frame: flows/copying/runner.py)."""

    def work(copying: Copying) -> Tally:
        ctx = ArchiveContext(
            **copying.context(),
            quality=opts.quality,
            move_to=opts.move_target(),
            tags=tuple(opts.tags or ()),
            delete_after=opts.delete_after_archive,
            backoff=opts.retry_backoff,
        )
        selection = opts.selection()
        events = select_events(ctx.client, selection)
        results = archive_events(ctx, events, transfers=opts.transfers, since=selection.since)
        return tally("archive", results, RESULT_STATES, noun="recordings", schema=RUN_COLUMNS)

    return run_copying("archive", opts, settings, work, s3=s3)


def preview_archive(opts: ArchiveOptions, settings: Settings) -> list[str]:
    """--dry-run: one line per recording saying what a run would do; no ledger run, no write but the calls
    counted in the run's rate budget (tasks/service.preview_client)."""
    opts.check()
    lines = []
    with read_ledger(opts.ledger) as reader, preview_client(settings, opts.ledger) as client:
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
