"""The plain backup runner (no Prefect): list the project, back up what is new or changed, index, report."""

from __future__ import annotations

from dataclasses import asdict

from videoferry.connectors.config import Settings
from videoferry.connectors.download import Downloader
from videoferry.connectors.s3 import S3Config
from videoferry.flows.backup.options import BackupOptions
from videoferry.flows.job import CopyOutcome, Run, failure, read_ledger, run_job, step_of
from videoferry.tasks.assets import choose_asset
from videoferry.tasks.backup.held import destination_id, held_videos
from videoferry.tasks.backup.plan import decide, list_videos
from videoferry.tasks.backup.report import write_report
from videoferry.tasks.backup.schedule import RESULT_STATES, back_up
from videoferry.tasks.backup.video import BackupContext
from videoferry.tasks.destination import open_destination
from videoferry.tasks.report_files import publish_report
from videoferry.tasks.service import preview_client

__all__ = ["preview_backup", "run_backup"]


def run_backup(opts: BackupOptions, settings: Settings, *, s3: S3Config | None = None) -> CopyOutcome:
    """Back up the project's videos into the destination, each step exactly once; the ledger keeps each."""
    opts.check()
    s3 = s3 or S3Config.from_env()
    dest = open_destination(opts.to, s3=s3, part_size=opts.part_size)

    def body(run: Run) -> CopyOutcome:
        dest.guard = run.guard  # nothing written there once the run may no longer hold its ledger
        silence = run.client.transport.silence  # a download is a call too: the same outage bound
        downloader = Downloader(settings.api_url, timeout=max(60.0, settings.timeout), silence=silence)
        run.on_close(downloader.close)
        outcome = CopyOutcome(exit_code=1)
        run.summary = lambda: {"counts": outcome.counts, "bytes": outcome.bytes}
        ctx = BackupContext(
            ledger=run.ledger,
            run_id=run.run_id,
            client=run.client,
            dest=dest,
            dest_id=destination_id(dest.uri),
            downloader=downloader,
            backoff=opts.retry_backoff,
        )
        results, index_error = back_up(ctx, opts.selection(), transfers=opts.transfers, prune=opts.prune)
        counts = {s: n for s in RESULT_STATES if (n := sum(1 for r in results if r.state == s))}
        failed = [r for r in results if r.state == "failed"]
        reasons = [f"{r.video_id}: {r.reason}" for r in failed]
        reasons += [f"index: {index_error}"] if index_error else []
        noted = [r for r in results if r.notes]
        warnings = [f"warning: {r.video_id}: {note}" for r in noted for note in r.notes]
        warnings += [f"{len(noted)} video(s) backed up without some of their files (above)"] if noted else []
        outcome = CopyOutcome(
            exit_code=1 if reasons else 0,
            reasons=reasons,
            counts=counts,
            bytes=sum(r.bytes for r in results),
            warnings=warnings,
            failed=[failure(f"video {r.video_id}", step_of(r.reason), r.reason) for r in failed]
            + ([failure(f"{opts.to} index", "index", index_error)] if index_error else []),
        )
        if opts.report_dir:  # a directory, or s3://bucket/prefix/ (an ephemeral worker's disk is gone after)
            outcome.report_files = publish_report(
                opts.report_dir, lambda folder: write_report(results, folder, counts), s3
            )
        return outcome

    return run_job("backup", asdict(opts), opts.ledger, settings, body)


def preview_backup(opts: BackupOptions, settings: Settings) -> list[str]:
    """--dry-run: one line per video saying what a run would do (the list read, nothing else); no write."""
    opts.check()
    dest = open_destination(opts.to, part_size=opts.part_size)
    selection = opts.selection()
    lines: list[str] = []
    with read_ledger(opts.ledger) as reader, preview_client(settings, opts.ledger) as client:
        held = held_videos(reader, destination_id(dest.uri)) if reader is not None else {}
        listed = list_videos(client, selection)
        for video in listed:
            entry = held.get(video.id)
            decision = decide(video, entry, selection.since)
            if decision.read:
                asset = choose_asset(video)
                what = f"{asset.quality} {asset.file_size} bytes" if asset else "no downloadable asset"
                verb = "copy" if entry is None or entry.copied is None else "read"
                lines.append(f"{verb} {video.id}: {decision.reason} ({what})")
            else:
                verb = {"unchanged": "keep", "pending": "wait"}.get(decision.state, "skip")
                lines.append(f"{verb} {video.id}" + (f": {decision.reason}" if decision.reason else ""))
        seen = {v.id for v in listed}
        for video_id, entry in held.items():
            if video_id in seen or not entry.kept:
                continue
            gone = entry.gone
            if gone is None:
                lines.append(
                    f"check {video_id}: kept, not listed any more (a run reads it: deleted or moved)"
                )
            elif opts.prune and not gone.get("moved"):
                lines.append(f"prune {video_id}: {gone.get('why')}")
            else:
                lines.append(f"kept {video_id}: {gone.get('why')}")
    return lines
