"""`videoferry check`: the command line of the check job (its options: flows/check/options.py)."""

from __future__ import annotations

import typer

from flows.check.options import CheckOptions
from flows.cli.app import add_command, job_command, run_command
from flows.options import ServiceOptions
from videoferry import jobs


def _check(opts: CheckOptions, service: ServiceOptions, prefect: bool) -> None:
    """Compare the library in the service with an inventory and its ledger, like `rclone check`.

    One line per item (= same, - missing in the service, * differs, with the fields named, ! not checked,
    and ~ differs as this ledger's own apply left it) and per video no item accounts for in the parents the
    inventory writes to (+, or ~ when apply made it; none with --one-way). Exit status 0 when every line is
    = or ~, 1 otherwise, 2 for configuration to fix. Only reads the service; --adopt writes the ledger.
    """
    from tasks.check.report import summary_lines

    outcome = run_command(jobs.check, opts, service)
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
    add_command(app, "check", job_command(CheckOptions, _check))
