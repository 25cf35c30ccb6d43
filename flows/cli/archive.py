"""`videoferry archive`: the command line of the archive job."""

from __future__ import annotations

import typer

from flows.cli.app import exit_on_errors, run_command, service_settings
from flows.options import DEFAULT_LEDGER


def _split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def archive(
    to: str = typer.Option(..., "--to", help="Destination: s3://bucket/prefix/ or a local directory."),
    events: str | None = typer.Option(None, "--events", help="Live event ids, comma separated."),
    project: str | None = typer.Option(None, "--project", help="Every live event under this project."),
    since: str | None = typer.Option(
        None,
        "--since",
        help="Only events whose latest stream finished since: YYYY-MM-DD, an ISO time (UTC) or 36h / 7d ago.",
    ),
    quality: str = typer.Option(
        "best", "--quality", help="best (original, else highest), original, 1080p..."
    ),
    move_to: str | None = typer.Option(
        None,
        "--move-to",
        help="After a verified copy, move the recording to PROJECT_ID or PROJECT_ID/FOLDER_ID.",
    ),
    tags: str | None = typer.Option(
        None, "--tags", help="After a verified copy, add these tags (comma separated)."
    ),
    delete_after_archive: bool = typer.Option(
        False,
        "--delete-after-archive",
        help="Delete each recording from the service once its archive is verified.",
    ),
    ledger: str = typer.Option(DEFAULT_LEDGER, envvar="VIDEOFERRY_LEDGER", help="The ledger file."),
    report: str | None = typer.Option(
        None, "--report", help="Write archive.csv/.parquet/.json into this dir."
    ),
    transfers: int = typer.Option(2, min=1, max=16, help="Recordings copied at once."),
    part_size: int = typer.Option(8 * 1024 * 1024, help="S3 multipart part size in bytes (at least 5 MiB)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be archived; write nothing."),
    no_prefect: bool = typer.Option(False, "--no-prefect", help="Run without the Prefect engine."),
) -> None:
    """Archive the recordings of finished live events (video, chat, QoS, manifest), then tidy them."""
    from flows.archive import ARCHIVE
    from flows.archive.runner import ArchiveOptions, preview_archive

    options = ArchiveOptions(
        to=to,
        events=_split(events),
        project=project,
        since=since,
        quality=quality,
        move_to=move_to,
        tags=_split(tags),
        delete_after_archive=delete_after_archive,
        ledger=ledger,
        report_dir=report,
        transfers=transfers,
        part_size=part_size,
    )
    with exit_on_errors():
        options.check()
        settings = service_settings()
        if dry_run:
            for line in preview_archive(options, settings):
                typer.echo(line)
            raise typer.Exit(0)
        outcome = run_command(ARCHIVE, options, settings, prefect=not no_prefect)
    for line in outcome.log_lines():
        typer.echo(line)
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
    typer.echo(f"recordings: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied")
    for path in outcome.report_files:
        typer.echo(f"wrote {path}")
    raise typer.Exit(outcome.exit_code)


def register(app: typer.Typer) -> None:
    """Add `archive` to the app."""
    app.command()(archive)
