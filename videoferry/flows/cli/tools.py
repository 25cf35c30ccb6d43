"""`videoferry emulator` and `videoferry demo`: the service's stand-in and a migration to try."""

from __future__ import annotations

import importlib
from types import ModuleType

import typer

from videoferry.flows.cli.app import add_command, comma_list
from videoferry.flows.options import MAX_TRANSFERS

#: The sandbox's server stack, installed by the `emulator` extra.
SANDBOX_EXTRA = "pip install 'videoferry[emulator]'"


def import_sandbox(command: str, module: str) -> ModuleType:
    """The emulator's (or a stand-in's) module; exit 2 naming the extra when its server stack is missing."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = f"needs {exc.name}, part of the emulator extra: {SANDBOX_EXTRA}"
        typer.echo(f"videoferry {command}: {missing}", err=True)
        raise typer.Exit(2) from None


def emulator(
    host: str = typer.Option("127.0.0.1", metavar="HOST", help="Address to listen on."),
    port: int = typer.Option(8080, metavar="PORT", help="Port of the API host (0: a free one)."),
    upload_port: int = typer.Option(8081, metavar="PORT", help="Port of the upload host (0: a free one)."),
    variant: list[str] | None = typer.Option(  # noqa: B008 - typer's declaration style
        None,
        "--variant",
        metavar="NAME,NAME",
        help="Make other plausible choices where the spec is silent (comma-separated or repeated;"
        " videoferry/emulator/README.md).",
    ),
) -> None:
    """Run the local emulator of the video service until interrupted."""
    serve_forever = import_sandbox("emulator", "videoferry.emulator.server").serve_forever
    try:
        serve_forever(host=host, port=port, upload_port=upload_port, variants=comma_list(variant) or ())
    except ValueError as exc:
        typer.echo(f"videoferry emulator: {exc}", err=True)
        raise typer.Exit(2) from None


def demo(
    items: int = typer.Option(30, min=1, max=500, metavar="N", help="How many clips to make and migrate."),
    workdir: str | None = typer.Option(
        None, metavar="DIR", help="Where to put clips, ledger and report (default: a temp dir)."
    ),
    transfers: int = typer.Option(
        4, min=1, max=MAX_TRANSFERS, metavar="N", help="Items transferred at once."
    ),
) -> None:
    """Start the emulator, make short real clips and migrate them through the real Prefect engine."""
    from videoferry.flows.demo import run_demo

    raise typer.Exit(run_demo(items=items, workdir=workdir, transfers=transfers))


def register(app: typer.Typer) -> None:
    """Add `emulator` and `demo` to the app."""
    add_command(app, "emulator", emulator)
    add_command(app, "demo", demo)
