"""The Typer app and what every command shares: parameters from option declarations, errors, exit codes."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from flows.options import Cli

if TYPE_CHECKING:
    from connectors.config import Settings
    from flows.job import Job


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


@contextmanager
def exit_on_errors() -> Iterator[None]:
    """A command's work: an exception the job map knows (flows/job.exit_for) ends the command with
    `error: ...` on stderr and its exit status; anything else goes on up (a bug shows its traceback)."""
    try:
        yield
    except Exception as exc:
        from flows.job import exit_for

        mapped = exit_for(exc)
        if mapped is None:
            raise
        raise fail(mapped[1], mapped[0]) from None


def service_settings(api_url: str | None = None, upload_url: str | None = None) -> Settings:
    """The service's settings from the environment, the command line's addresses first (ConfigError)."""
    from connectors.config import Settings

    return Settings.from_env(api_url=api_url, upload_url=upload_url)


def run_command(job: Job, opts: Any, settings: Settings, *, prefect: bool) -> Any:
    """Run a job from the command line: through its Prefect flow, as a deployment's worker runs it (and its
    outcome read back, flows/prefect_job.py), or its plain runner; the job's Outcome."""
    if prefect and job.flow is not None:
        from flows.prefect_job import flow_params, run_flow

        flow = job.load(job.flow)
        return run_flow(flow, flow_params(flow, opts, settings), job.load(job.outcome))
    return job.load(job.runner)(opts, settings)
