"""The Typer app and what every command shares: parameters from option declarations, errors, exit codes."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from flows.options import Cli, OptionsT, ServiceOptions, cli_fields, options_from_params

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
    if cli.commas:
        annotation = str | None  # one comma-separated value; the option holds the list
    info: Any
    if cli.argument:
        info = typer.Argument(default, help=help_text)
    else:
        flags = [cli.flag] if cli.flag else [f"--{spec.name.replace('_', '-')}"] if annotation is bool else []
        info = typer.Option(default, *flags, min=cli.min, max=cli.max, envvar=cli.envvar, help=help_text)
    return inspect.Parameter(
        cli.name or spec.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation
    )


def command_signature(
    declaration: type, names: tuple[str, ...] | None = None, *, prefect: bool | None = None
) -> inspect.Signature:
    """A job command's parameters: the declaration's command line options (only `names`, when given), then
    --prefect/--no-prefect (its default: `prefect`) when the job has a flow, then --api-url / --upload-url."""
    hints = {**typing.get_type_hints(declaration), **typing.get_type_hints(ServiceOptions)}
    parameters = [cli_parameter(f, hints[f.name]) for f in cli_fields(declaration, names)]
    if prefect is not None:
        switch = typer.Option(
            prefect, "--prefect/--no-prefect", help=f"Run as a Prefect flow{' (default)' if prefect else ''}."
        )
        parameters.append(
            inspect.Parameter("prefect", inspect.Parameter.KEYWORD_ONLY, default=switch, annotation=bool)
        )
    parameters += [cli_parameter(f, hints[f.name]) for f in cli_fields(ServiceOptions)]
    return inspect.Signature(parameters, return_annotation=None)


def options_from_cli(
    declaration: type[OptionsT], values: Mapping[str, Any]
) -> tuple[OptionsT, ServiceOptions]:
    """The options from the command line's values: units converted, comma lists split, then bounds and the
    options' own checks as for a flow's parameters (flows/options.options_from_params: ConfigError)."""
    given: dict[str, Any] = {}
    for spec in [*cli_fields(declaration), *cli_fields(ServiceOptions)]:
        cli: Cli = spec.metadata["cli"]
        name = cli.name or spec.name
        if name not in values:
            continue
        value = values[name]
        if cli.commas:
            value = [part.strip() for part in (value or "").split(",") if part.strip()] or None
        elif cli.unit != 1 and value is not None:
            value *= cli.unit
        given[spec.name] = value
    return options_from_params(declaration, given)


def job_command(
    declaration: type[OptionsT],
    handler: Callable[[OptionsT, ServiceOptions, bool], None],
    *,
    names: tuple[str, ...] | None = None,
    prefect: bool | None = None,
) -> Callable[..., None]:
    """A job's command: its parameters derived from the job's declared options (command_signature), its help
    the handler's docstring; handler(options, service, prefect) does the work."""

    def command(**values: Any) -> None:
        use_prefect = bool(values.pop("prefect", False))
        with exit_on_errors():
            opts, service = options_from_cli(declaration, values)
        handler(opts, service, use_prefect)

    command.__signature__ = command_signature(declaration, names, prefect=prefect)  # type: ignore[attr-defined]
    command.__doc__ = handler.__doc__
    return command


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


def service_settings(service: ServiceOptions | None = None) -> Settings:
    """The service's settings from the environment, the command line's addresses first (ConfigError); the
    token from VIDEOFERRY_TOKEN, or the Prefect Secret block VIDEOFERRY_TOKEN_BLOCK names."""
    from tasks.service import service_settings as from_env

    service = service or ServiceOptions()
    return from_env(api_url=service.api_url, upload_url=service.upload_url)


def run_command(job: Job, opts: Any, settings: Settings, *, prefect: bool) -> Any:
    """Run a job from the command line: through its Prefect flow, as a deployment's worker runs it (and its
    outcome read back, flows/prefect_job.py), or its plain runner; the job's Outcome."""
    if prefect and job.flow is not None:
        from flows.prefect_job import flow_params, run_flow

        flow = job.load(job.flow)
        return run_flow(flow, flow_params(flow, opts, settings), job.load(job.outcome))
    return job.load(job.runner)(opts, settings)


def show_outcome(outcome: Any, totals: str) -> None:
    """A job's end on the terminal: what the run says, its totals line, the files it wrote; the command
    exits with the run's exit status."""
    for line in outcome.log_lines():
        typer.echo(line)
    typer.echo(totals)
    for path in outcome.report_files:
        typer.echo(f"wrote {path}")
    raise typer.Exit(outcome.exit_code)
