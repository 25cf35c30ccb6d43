"""The plain archive runner (no Prefect): select events, archive their recordings once each, report."""

from __future__ import annotations

import logging
from dataclasses import asdict

from videoferry.connectors.config import Settings
from videoferry.connectors.download import Downloader
from videoferry.connectors.s3 import S3Config
from videoferry.flows.archive.options import ArchiveOptions
from videoferry.flows.job import CopyOutcome, Run, failure, read_ledger, run_job, step_of
from videoferry.state.machine import OpStatus
from videoferry.tasks.archive.plan import choose_asset, event_recordings, select_events
from videoferry.tasks.archive.recording import TERMINAL_BAD, ArchiveContext, RecordingResult, op_key
from videoferry.tasks.archive.report import write_report
from videoferry.tasks.archive.schedule import RESULT_STATES, archive_events
from videoferry.tasks.destination import open_destination
from videoferry.tasks.report_files import publish_report
from videoferry.tasks.service import preview_client

log = logging.getLogger(__name__)

__all__ = ["run_archive", "preview_archive"]


def run_archive(opts: ArchiveOptions, settings: Settings, *, s3: S3Config | None = None) -> CopyOutcome:
    """Archive the recordings of the selected events, each step exactly once; the ledger keeps every step."""
    opts.check()
    dest = open_destination(opts.to, s3=s3 or S3Config.from_env(), part_size=opts.part_size)

    def body(run: Run) -> CopyOutcome:
        dest.guard = run.guard  # nothing written there once the run may no longer hold its ledger
        silence = run.client.transport.silence  # a download is a call too: the same outage bound
        downloader = Downloader(settings.upload_url, timeout=max(60.0, settings.timeout), silence=silence)
        run.on_close(downloader.close)
        outcome = CopyOutcome(exit_code=1)
        run.summary = lambda: {"counts": outcome.counts, "bytes": outcome.bytes}
        ctx = ArchiveContext(
            ledger=run.ledger,
            run_id=run.run_id,
            client=run.client,
            dest=dest,
            downloader=downloader,
            quality=opts.quality,
            move_to=opts.move_target(),
            tags=tuple(opts.tags or ()),
            delete_after=opts.delete_after_archive,
            backoff=opts.retry_backoff,
            gap=run.gap,
        )
        selection = opts.selection()
        events = select_events(run.client, selection)
        results = archive_events(ctx, events, transfers=opts.transfers, since=selection.since)
        counts = {state: sum(1 for r in results if r.state == state) for state in RESULT_STATES}
        failed = [r for r in results if r.state == "failed"]
        outcome = CopyOutcome(
            exit_code=1 if failed else 0,
            counts={k: v for k, v in counts.items() if v},
            reasons=[f"{r.event_id}/{r.stream_id}/{r.video_id}: {r.reason}" for r in failed],
            bytes=sum(r.bytes for r in results if r.state == "archived"),
            failed=[failure(_where(r), step_of(r.reason), r.reason) for r in failed],
        )
        if opts.report_dir:
            outcome.report_files = publish_report(opts.report_dir, lambda d: write_report(results, d), s3)
        return outcome

    return run_job("archive", asdict(opts), opts.ledger, settings, body)


def _where(result: RecordingResult) -> str:
    return f"event {result.event_id} stream {result.stream_id} video {result.video_id}"


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
