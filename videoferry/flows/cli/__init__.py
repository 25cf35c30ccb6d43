"""The `videoferry` command line: the app (flows/cli/app.py) with each job's commands (one module each)."""

from __future__ import annotations

import atexit
import gc
import os
import sys

import typer

from videoferry.flows.cli import (
    apply,
    archive,
    backup,
    check,
    inventory,
    ledger,
    links,
    migrate,
    setup,
    tools,
)
from videoferry.flows.cli.app import new_app

#: The modules whose commands make up the app, in the order `--help` lists them.
COMMANDS = (migrate, ledger, apply, tools, archive, backup, check, links, inventory, setup)

app = new_app()
for _module in COMMANDS:
    _module.register(app)


def main() -> None:
    """Entry point of the `videoferry` console script."""
    # This workplace, like many migration hosts, has no route out: Prefect's telemetry would only log errors.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # An exit handler after Prefect's (they run last registered first): the interpreter's own teardown then
    # skips the garbage collector's passes over every object the imports made (Prefect's: 0.5-1 s measured,
    # for memory the process gives back anyway). It only hides objects from the collector: logging's own exit
    # handler still flushes the logs, and the ledger commits as it goes.
    atexit.register(gc.freeze)
    from videoferry.flows import job

    job.FREEZE_ON_START = True  # a run starts by putting the imports out of the collector's sight
    from videoferry.flows.interrupts import catch_interrupts

    catch_interrupts()  # Ctrl-C: the run stops within seconds with one line; a second one stops at once
    try:
        app()
    except KeyboardInterrupt as exc:  # the run (if one was going) is marked interrupted by flows/job.run_job
        from videoferry.flows.job import exit_for

        code, message = exit_for(exc) or (130, "interrupted")
        typer.echo(message, err=True)
        sys.exit(code)
