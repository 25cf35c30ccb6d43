"""`videoferry archive`: the command line of the archive job."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import typer

from flows.options import DEFAULT_LEDGER

if TYPE_CHECKING:
    from connectors.config import Settings
    from flows.archive.runner import ArchiveOptions, ArchiveOutcome


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
    from connectors.config import ConfigError, Settings
    from connectors.errors import AuthError
    from flows.archive.runner import ArchiveConfigError, ArchiveOptions, preview_archive, run_archive
    from state.errors import LedgerBusyError, LedgerError

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        raise typer.Exit(_fail(str(exc))) from None
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
    try:
        options.check()
        if dry_run:
            for line in preview_archive(options, settings):
                typer.echo(line)
            raise typer.Exit(0)
        if no_prefect:
            outcome = run_archive(options, settings)
        else:
            outcome = _run_flow(options, settings)
    except (ArchiveConfigError, LedgerBusyError, LedgerError) as exc:
        raise typer.Exit(_fail(str(exc))) from None
    except AuthError as exc:
        raise typer.Exit(_fail(f"the service refused the token (VIDEOFERRY_TOKEN): {exc}")) from None
    for line in outcome.reasons:
        typer.echo(line)
    counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
    typer.echo(f"recordings: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied")
    for path in outcome.report_files:
        typer.echo(f"wrote {path}")
    raise typer.Exit(outcome.exit_code)


def _fail(message: str) -> int:
    typer.echo(f"error: {message}", err=True)
    return 2


def _run_flow(options: ArchiveOptions, settings: Settings) -> ArchiveOutcome:
    """The run through the Prefect flow (a Failed flow run still carries the outcome)."""
    from flows.archive.flow import archive_flow
    from flows.archive.runner import ArchiveOutcome

    params: dict[str, Any] = dataclasses.asdict(options)
    state = archive_flow(
        **params, api_url=settings.api_url, upload_url=settings.upload_url, return_state=True
    )
    result = state.result(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    assert isinstance(result, dict)
    return ArchiveOutcome(**result)


def register(app: typer.Typer) -> None:
    """Add `archive` to the app."""
    app.command()(archive)
