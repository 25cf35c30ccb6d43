"""`videoferry check`: the command line of the check job."""

from __future__ import annotations

import typer

from flows.options import DEFAULT_LEDGER


def check(
    inventory: str = typer.Argument(..., help="The inventory the library was migrated from (path or s3://)."),
    ledger: str = typer.Option(
        DEFAULT_LEDGER,
        envvar="VIDEOFERRY_LEDGER",
        help="The migration's ledger: items are found by its video ids (without one, by title and size).",
    ),
    parent_id: str | None = typer.Option(None, help="Project or folder of rows without parent_id."),
    download_md5: bool = typer.Option(
        False, "--download-md5", help="Hash the original's download when the service gives no md5."
    ),
    combined: str | None = typer.Option(None, help="Also write the combined lines (=, -, +, *, !) here."),
    report: str | None = typer.Option(
        None, help="Write the report (CSV, Parquet, JSON, HTML) into this dir."
    ),
    adopt: bool = typer.Option(
        False,
        "--adopt",
        help="Record in the ledger the videos that provably are items' (title and bytes); no service write.",
    ),
) -> None:
    """Compare the library in the service with an inventory and its ledger, like `rclone check`.

    One line per item (= same, - missing in the service, * differs, with the fields named, ! not checked) and
    per video no item accounts for (+). Exit status 0 only when everything matches, 1 otherwise, 2 for
    configuration to fix. Only reads the service; --adopt writes the ledger.
    """
    from connectors.config import ConfigError, Settings
    from connectors.errors import VideoApiError
    from connectors.inventory import InventoryError
    from flows.check.runner import CheckConfigError, CheckOptions, run_check
    from state.errors import LedgerError
    from tasks.check.report import summary_lines

    options = CheckOptions(
        inventory=inventory,
        ledger=ledger,
        parent_id=parent_id,
        download_md5=download_md5,
        combined=combined,
        report_dir=report,
        adopt=adopt,
    )
    try:
        settings = Settings.from_env()
        outcome = run_check(options, settings)
    except (ConfigError, InventoryError, LedgerError, CheckConfigError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except VideoApiError as exc:  # the listing failed after its retries: nothing could be checked
        typer.echo(f"error: the destination could not be listed: {exc}", err=True)
        raise typer.Exit(1) from None
    for line in outcome.lines:
        typer.echo(line.text())
    for note in outcome.notes:
        typer.echo(note)
    for text in summary_lines(outcome.summary):
        typer.echo(text)
    for path in outcome.report_files:
        typer.echo(f"wrote {path}")
    raise typer.Exit(outcome.exit_code)


def register(app: typer.Typer) -> None:
    """Add `check` to the app."""
    app.command()(check)
