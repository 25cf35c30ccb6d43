"""The Typer app and what every command shares: parameters from option declarations, errors, exit codes."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import typer

from flows.options import Cli


def new_app() -> typer.Typer:
    """The `videoferry` app, with no command yet (flows/cli/__init__.py adds each job's)."""
    return typer.Typer(
        name="videoferry",
        help="Move whole video libraries into the video service and run batch jobs on them.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `error: message` on stderr; the Exit to raise (exit status `code`)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def cli_parameter(spec: dataclasses.Field[Any], annotation: Any) -> inspect.Parameter:
    """The command line's parameter for one declared option (flows/options.py)."""
    cli: Cli = spec.metadata["cli"]
    help_text: str = spec.metadata["help"]
    default: Any = ... if spec.default is dataclasses.MISSING else spec.default
    if cli.unit != 1 and isinstance(default, int):
        default //= cli.unit
    info: Any
    if cli.argument:
        info = typer.Argument(default, help=help_text)
    else:
        flags = [cli.flag] if cli.flag else [f"--{spec.name.replace('_', '-')}"] if annotation is bool else []
        info = typer.Option(default, *flags, min=cli.min, max=cli.max, envvar=cli.envvar, help=help_text)
    return inspect.Parameter(
        cli.name or spec.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation
    )
