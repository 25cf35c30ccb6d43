"""The shape of a copying job's command (`videoferry archive`, `videoferry backup`): --dry-run's preview or
the run, then its totals line."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from connectors.config import Settings
from flows.cli.app import exit_on_errors, run_command, service_settings, show_outcome
from flows.options import ServiceOptions

if TYPE_CHECKING:
    from flows.job import Job

__all__ = ["copy_handler"]


def copy_handler(
    job: Callable[[], Job], preview: Callable[[], Callable[[Any, Settings], list[str]]], noun: str, doc: str
) -> Callable[[Any, ServiceOptions, bool], None]:
    """The handler flows/cli/app.job_command runs for a copying job (its help: doc): with --dry-run the
    preview's lines (exit status 0), else the run (through Prefect or not), its lines and
    `<noun>: N (counts), B bytes copied`. job and preview are imported only when the command runs."""

    def handler(opts: Any, service: ServiceOptions, prefect: bool) -> None:
        with exit_on_errors():
            settings = service_settings(service)
            if opts.dry_run:
                for line in preview()(opts, settings):
                    typer.echo(line)
                raise typer.Exit(0)
            outcome = run_command(job(), opts, settings, prefect=prefect)
        counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
        show_outcome(
            outcome, f"{noun}: {sum(outcome.counts.values())} ({counts}), {outcome.bytes} bytes copied"
        )

    handler.__doc__ = doc
    return handler
