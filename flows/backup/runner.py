"""The plain backup runner (no Prefect): list the project, back up what is new or changed, index, report."""

from __future__ import annotations

from connectors.config import Settings
from connectors.s3 import S3Config
from flows.backup.options import BackupOptions
from flows.copying.runner import Copying, Tally, run_copying, tally
from flows.job import CopyOutcome, read_ledger
from tasks.assets import choose_asset
from tasks.backup.held import destination_id, held_videos
from tasks.backup.listing import decide, list_videos
from tasks.backup.report import RUN_COLUMNS
from tasks.backup.schedule import RESULT_STATES, back_up
from tasks.backup.video import BackupContext
from tasks.destination import open_destination
from tasks.service import preview_client

__all__ = ["preview_backup", "run_backup"]


def run_backup(opts: BackupOptions, settings: Settings, *, s3: S3Config | None = None) -> CopyOutcome:
    """Back up the project's videos into the destination, each step exactly once; the ledger keeps each
    (the frame: flows/copying/runner.py). Its own lines: the index's failure, the files a video was backed
    up without (warnings)."""

    def work(copying: Copying) -> Tally:
        ctx = BackupContext(
            **copying.context(), dest_id=destination_id(copying.dest.uri), backoff=opts.retry_backoff
        )
        results, index_error = back_up(ctx, opts.selection(), transfers=opts.transfers, prune=opts.prune)
        noted = [r for r in results if r.notes]
        warnings = [f"warning: {r.video_id}: {note}" for r in noted for note in r.notes]
        warnings += [f"{len(noted)} video(s) backed up without some of their files (above)"] if noted else []
        index = [(f"{opts.to} index", "index", index_error)] if index_error else []
        return tally(
            "backup",
            results,
            RESULT_STATES,
            noun="videos",
            schema=RUN_COLUMNS,
            more_failed=index,
            warnings=warnings,
        )

    return run_copying("backup", opts, settings, work, s3=s3)


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
