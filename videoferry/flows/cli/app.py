"""The Typer app and what every command shares: parameters from option declarations, the conventions of a
command line (-h, --version, -v / -q, plain value names in --help), errors, exit codes."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import os
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from videoferry.errors import VideoferryError
from videoferry.flows.cli import plain_help
from videoferry.flows.options import Cli, OptionsT, ServiceOptions, cli_fields, options_from_params

if TYPE_CHECKING:
    from videoferry.connectors.config import Settings
    from videoferry.flows.warmup import ServerWarmup
    from videoferry.jobs import Preview

#: A job's outcome, as its videoferry.jobs function returns it.
OutcomeT = typing.TypeVar("OutcomeT")


#: -h and --help on every command (the habit of rclone, aws, terraform).
CONTEXT = {"help_option_names": ["-h", "--help"]}
#: The packages whose log lines -v / -q make louder or quieter.
LOGGED_PACKAGES = ("connectors", "core", "flows", "state", "tasks")
#: What --prefect / --no-prefect says in every job's --help (the default is the same for every job).
PREFECT_HELP = (
    "Run the job as a Prefect flow (on PREFECT_API_URL's server, else a temporary local one that starts"
    " first). Default: through Prefect when a Prefect server is configured (PREFECT_API_URL or the active"
    " Prefect profile), else without Prefect."
)


def _plain_names(params: list[Any]) -> list[Any]:
    """--help shows a value's name (`--ledger PATH`, `INVENTORY`), never a Python type (`<str>`, `<bool>`);
    an error names an option as --help does (its old names left out)."""
    for param in params:
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or (param.name or "").upper()
            param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]  # the name says it
        elif isinstance(param, TyperOption):
            if param.is_flag or param.count:
                param.metavar = ""  # a flag takes no value
            elif param.metavar is None:
                param.metavar = (param.name or "").upper()
            param.get_error_hint = _error_hint(param.opts)  # type: ignore[method-assign]  # no old name
    return params


def _error_hint(opts: list[str]) -> Callable[[], str]:
    """How an error names an option: as --help shows it (`'--project-id'`, not its old `'--project'`)."""
    names = " / ".join(f"'{name}'" for name in plain_help.shown_names(opts))
    return lambda: names


class Command(TyperCommand):
    """A command whose --help is plain wrapped text (flows/cli/plain_help.py) and names values plainly:
    `migrate [OPTIONS] INVENTORY`."""

    context_class = plain_help.PlainContext

    def format_options(self, ctx: Any, formatter: Any) -> None:
        plain_help.format_options(self, ctx, formatter)

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_names(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "").upper()
                pieces.append(name if param.required else f"[{name}]")
        return pieces


class Group(TyperGroup):
    """The app and its sub-apps (setup): plain wrapped --help with plain value names, as Command."""

    context_class = plain_help.PlainContext

    def format_options(self, ctx: Any, formatter: Any) -> None:
        plain_help.format_options(self, ctx, formatter)
        plain_help.format_commands(self, ctx, formatter)

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_names(super().get_params(ctx))


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"videoferry {version('videoferry')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("videoferry (not installed)")
        raise typer.Exit(0)


def _app_options(
    show_version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Move whole video libraries into the video service and run batch jobs on them.

    Every command takes -h/--help, -v/--verbose (-vv: debug) and -q/--quiet. Exit status: 0 done, 1 not
    everything done (the lines say what), 2 configuration to fix first, 130 interrupted (rerun to resume).
    """


def new_app() -> typer.Typer:
    """The `videoferry` app, with no command yet (flows/cli/__init__.py adds each job's); shell completion
    for bash, zsh and fish (--install-completion, --show-completion: typer's)."""
    app = new_group("videoferry", "", completion=True)
    app.callback()(_app_options)
    return app


def new_group(name: str, help: str, *, completion: bool = False) -> typer.Typer:
    """An app or sub-app (`setup`) with the conventions of every command (-h, plain value names);
    completion: the app's --install-completion / --show-completion (the top app only)."""
    described: dict[str, Any] = {"help": help} if help else {}  # else the callback's docstring
    return typer.Typer(
        name=name,
        **described,
        cls=Group,
        context_settings=CONTEXT,
        no_args_is_help=True,
        add_completion=completion,
        rich_markup_mode=None,  # plain wrapped --help, no boxes (flows/cli/plain_help.py)
        pretty_exceptions_enable=False,
    )


def add_command(app: typer.Typer, name: str, function: Callable[..., Any]) -> None:
    """Add a command to an app, with -v / -q (with_verbosity) and plain value names in its --help."""
    app.command(name, cls=Command, context_settings=CONTEXT)(with_verbosity(function))


# -- -v / -q: how much a command says -------------------------------------------------------------------

_quiet = False


def quiet() -> bool:
    """Whether the command runs with -q (only errors and why it did not finish are printed)."""
    return _quiet


def say(line: str = "") -> None:
    """Print a line of a command's normal output (on stdout), unless -q."""
    if not _quiet:
        typer.echo(line)


def set_verbosity(verbose: int, be_quiet: bool) -> None:
    """-v: videoferry's own log lines from INFO, -vv from DEBUG; -q: errors only, no live display, no summary
    when everything is done. Without either nothing is changed (warnings show as they always do)."""
    global _quiet
    _quiet = be_quiet
    if be_quiet:
        level = logging.ERROR
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # Prefect reads it when imported
    elif verbose:
        level = logging.INFO if verbose == 1 else logging.DEBUG
        logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    else:
        return
    for name in LOGGED_PACKAGES:
        logging.getLogger(name).setLevel(level)


def _verbosity_parameters() -> list[inspect.Parameter]:
    verbose = typer.Option(0, "-v", "--verbose", count=True, help="Say more (-vv: debug lines too).")
    be_quiet = typer.Option(False, "-q", "--quiet", help="Print only errors and why the run did not finish.")
    return [
        inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=verbose, annotation=int),
        inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=be_quiet, annotation=bool),
    ]


def with_verbosity(function: Callable[..., Any]) -> Callable[..., Any]:
    """The command `function` with -v / --verbose and -q / --quiet added to its parameters."""

    @functools.wraps(function)
    def command(*args: Any, verbose: int = 0, quiet: bool = False, **values: Any) -> Any:
        set_verbosity(verbose, quiet)
        return function(*args, **values)

    signature = inspect.signature(function)
    parameters = [*signature.parameters.values(), *_verbosity_parameters()]
    command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return command


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `error: message` on stderr (an interruption's line as it is); the Exit to raise (status
    `code`)."""
    typer.echo(message if message.startswith("interrupted") else f"error: {message}", err=True)
    return typer.Exit(code)


def cli_parameter(spec: dataclasses.Field[Any], annotation: Any) -> inspect.Parameter:
    """The command line's parameter for one declared option (flows/options.py)."""
    cli: Cli = spec.metadata["cli"]
    help_text: str = spec.metadata["help"]
    default: Any = ... if spec.default is dataclasses.MISSING else spec.default
    if cli.unit != 1 and isinstance(default, int):
        default //= cli.unit
    if cli.commas:
        annotation = list[str] | None  # repeatable, each value comma-separated: options_from_cli splits
    info: Any
    if cli.argument:
        info = typer.Argument(default, help=help_text, metavar=cli.metavar or spec.name.upper())
    else:
        flags = [cli.flag or f"--{(cli.name or spec.name).replace('_', '-')}", *cli.aliases]
        info = typer.Option(
            default,
            *flags,
            min=cli.min,
            max=cli.max,
            envvar=cli.envvar,
            help=help_text,
            metavar=None if annotation is bool else cli.metavar,
        )
    return inspect.Parameter(
        cli.name or spec.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation
    )


def command_signature(
    declaration: type, names: tuple[str, ...] | None = None, *, flow: bool = False
) -> inspect.Signature:
    """A job command's parameters: the declaration's command line options (only `names`, when given), then
    --prefect/--no-prefect when the job has a flow (unset by default: use_prefect decides), then --api-url /
    --upload-url."""
    hints = {**typing.get_type_hints(declaration), **typing.get_type_hints(ServiceOptions)}
    parameters = [cli_parameter(f, hints[f.name]) for f in cli_fields(declaration, names)]
    if flow:
        switch = typer.Option(None, "--prefect/--no-prefect", help=PREFECT_HELP, show_default=False)
        parameters.append(
            inspect.Parameter(
                "prefect", inspect.Parameter.KEYWORD_ONLY, default=switch, annotation=bool | None
            )
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
            value = comma_list(value)
        elif cli.unit != 1 and value is not None:
            value *= cli.unit
        given[spec.name] = value
    return options_from_params(declaration, given)


def comma_list(values: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
    """A list option's values, each comma-separated (`--tags a,b --tags c`: a, b, c); blanks dropped; None
    when nothing is left."""
    given = [values] if isinstance(values, str) else list(values or ())
    return [part.strip() for value in given for part in value.split(",") if part.strip()] or None


def job_command(
    declaration: type[OptionsT],
    handler: Callable[[OptionsT, ServiceOptions, bool], None],
    *,
    names: tuple[str, ...] | None = None,
    flow: bool = False,
) -> Callable[..., None]:
    """A job's command: its parameters derived from the job's declared options (command_signature), its help
    the handler's docstring; handler(options, service, prefect) does the work. flow: the job has a Prefect
    flow (--prefect / --no-prefect decide; without either, use_prefect)."""

    def command(**values: Any) -> None:
        use_prefect = flow and use_prefect_by_default(values.pop("prefect", None))
        with exit_on_errors():
            opts, service = options_from_cli(declaration, values)
        if use_prefect and not getattr(opts, "dry_run", False):
            start_prefect_server()  # first: the server process starts while this one imports and checks
        handler(opts, service, use_prefect)

    command.__signature__ = command_signature(declaration, names, flow=flow)  # type: ignore[attr-defined]
    command.__doc__ = handler.__doc__
    return command


@contextmanager
def exit_on_errors() -> Iterator[None]:
    """A command's work: a VideoferryError (what the API raises) or an exception the job map knows
    (flows/job.exit_for) ends the command with `error: ...` on stderr and its exit status (Ctrl-C: its line
    and 130); anything else goes on up (a bug shows its traceback)."""
    try:
        yield
    except VideoferryError as exc:  # what the API raised: its message and exit status
        raise fail(str(exc), exc.exit_code) from None
    except (Exception, KeyboardInterrupt) as exc:  # Ctrl-C: one line (which run stopped), exit status 130
        from videoferry.flows.job import exit_for

        mapped = exit_for(exc)
        if mapped is None:
            raise
        raise fail(mapped[1], mapped[0]) from None


def service_settings(service: ServiceOptions | None = None) -> Settings:
    """The service's settings from the environment, the command line's addresses first, checked to answer
    (ConfigError: a variable missing, or an address that does not answer, named with what to fix); the token
    from VIDEOFERRY_TOKEN, or the Prefect Secret block VIDEOFERRY_TOKEN_BLOCK names."""
    from videoferry.tasks.preflight import check_reachable
    from videoferry.tasks.service import service_settings as from_env

    service = service or ServiceOptions()
    settings = from_env(api_url=service.api_url, upload_url=service.upload_url)
    check_reachable(settings)
    return settings


def use_prefect_by_default(given: bool | None) -> bool:
    """--prefect / --no-prefect when given; else whether a Prefect server is configured (PREFECT_API_URL or
    the active profile: flows/running.use_prefect), so a team's command line runs show in its Prefect UI."""
    from videoferry.flows.running import use_prefect

    return use_prefect(given)


def announce(line: str) -> None:
    """The first line of a run through a Prefect server: where its flow run's page is (on stderr, -q too)."""
    typer.echo(line, err=True)


_server: ServerWarmup | None = None


def start_prefect_server() -> None:
    """--prefect: start Prefect's temporary server in its own process now (flows/warmup.py; nothing when
    PREFECT_API_URL or the active profile names a server), so it comes up while the command imports and
    checks."""
    global _server
    if _server is None:
        from videoferry.flows.prefect_server import configured_api_url
        from videoferry.flows.warmup import ServerWarmup

        _server = ServerWarmup() if configured_api_url() else ServerWarmup().start()


def join_prefect_server() -> None:
    """The server start_prefect_server() started, once it answers, is the one the flow run uses."""
    start_prefect_server()
    assert _server is not None
    _server.join()


def run_command(
    function: Callable[..., OutcomeT],
    opts: Any,
    service: ServiceOptions,
    *,
    prefect: bool | None = None,
    **keywords: Any,
) -> OutcomeT:
    """Run a job as the Python API runs it: `function` is its videoferry.jobs function, given the command's
    options whole and its addresses; prefect: --prefect / --no-prefect as decided (None for a job without a
    flow), --prefect's temporary server joined first and the flow run's page announced. Its errors end the
    command (exit_on_errors); the job's outcome otherwise."""
    if prefect is not None:
        if prefect and not getattr(opts, "dry_run", False):
            join_prefect_server()
        keywords.update(prefect=prefect, announce=announce)
    with exit_on_errors():
        return function(opts, api_url=service.api_url, upload_url=service.upload_url, **keywords)


def show_preview(preview: Preview) -> NoReturn:
    """A dry run's end on the terminal: the preview's lines; the command exits with its exit status."""
    for line in preview.lines:
        typer.echo(line)
    raise typer.Exit(preview.exit_code)


def show_outcome(outcome: Any, totals: str) -> None:
    """A job's end on the terminal: what the run says, its totals line, the files it wrote; the command
    exits with the run's exit status."""
    for line in outcome.log_lines():
        typer.echo(line)
    typer.echo(totals)
    for path in outcome.report_files:
        typer.echo(f"wrote {path}")
    raise typer.Exit(outcome.exit_code)
