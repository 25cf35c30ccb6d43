"""The videoferry command line: runs flows, the emulator and the ledger-only commands."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import sys
import typing
from typing import Any

import typer

from flows.options import (
    DEFAULT_LEDGER,
    ENTRY_DECLARATIONS,
    VIAS,
    Cli,
    MigrateOptions,
    ServiceOptions,
    entry_fields,
    from_params,
)

app = typer.Typer(
    name="videoferry",
    help="Move whole video libraries into the video service and run batch jobs on them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

REPORT_FORMATS = ("csv", "parquet", "json", "html")


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _cli_parameter(spec: dataclasses.Field[Any], annotation: Any) -> inspect.Parameter:
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


def _migrate_signature() -> inspect.Signature:
    """`migrate`'s parameters: the entry options of flows/options.py, --prefect/--no-prefect before URLs."""
    hints = {name: hint for d in ENTRY_DECLARATIONS for name, hint in typing.get_type_hints(d).items()}
    declared = [_cli_parameter(f, hints[f.name]) for f in entry_fields()]
    prefect = inspect.Parameter(
        "prefect",
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(True, "--prefect/--no-prefect", help="Run as a Prefect flow (default)."),
        annotation=bool,
    )
    services = len(entry_fields(ServiceOptions))
    return inspect.Signature([*declared[:-services], prefect, *declared[-services:]], return_annotation=None)


def _options_from_cli(values: dict[str, Any]) -> tuple[MigrateOptions, ServiceOptions]:
    """The declared options from the command line's values (units converted, 0 as no bound)."""
    params = {}
    for spec in entry_fields():
        cli: Cli = spec.metadata["cli"]
        value = values[cli.name or spec.name]
        params[spec.name] = value * cli.unit if cli.unit != 1 and value is not None else value
    return from_params(params)


def migrate(**values: Any) -> None:
    """Migrate every item of an inventory into the service (safe to rerun: done items are skipped)."""
    prefect: bool = values.pop("prefect")
    opts, service = _options_from_cli(values)
    if opts.via not in VIAS:
        raise _fail(f"--via must be one of {', '.join(VIAS)}, not {opts.via!r}")
    if opts.shard:
        from core.item import parse_shard

        try:
            parse_shard(opts.shard)
        except ValueError as exc:
            raise _fail(f"--shard: {exc}") from None
    warmup = None
    if prefect and not opts.dry_run:
        from flows.warmup import ServerWarmup

        warmup = ServerWarmup().start()  # first: the server process starts while this one imports
    from rich.console import Console

    from connectors.config import ConfigError, Settings
    from connectors.inventory import InventoryError
    from flows.progress import LiveDisplay
    from flows.runner import preview_migration, run_migration
    from state.errors import LedgerError

    console = Console(stderr=True)
    ledger = opts.ledger
    try:
        if opts.dry_run:
            result = preview_migration(opts).as_dict()
        else:
            settings = Settings.from_env(api_url=service.api_url, upload_url=service.upload_url)
            from tasks.open_run import run_limiter

            counter = run_limiter(settings, ledger)
            if warmup is not None:
                _check_token(settings, counter)
            with LiveDisplay(ledger, console, counter):
                if warmup is not None:
                    from flows.migrate_flow import run_flow

                    warmup.join()
                    # The URLs travel as flow parameters; the token stays in this process's environment.
                    result = run_flow(opts, api_url=settings.api_url, upload_url=settings.upload_url)
                else:
                    result = run_migration(opts, settings).as_dict()
    except (ConfigError, InventoryError, LedgerError) as exc:
        raise _fail(str(exc)) from None
    _print_outcome(result)
    raise typer.Exit(int(result["exit_code"]))


def _check_token(settings: Any, limiter: Any) -> None:
    """Check the token (one list call) while Prefect's temporary server starts in its own process.

    A bad token fails here, before the server is even up; a pass stands for the run's own preflight.
    """
    from connectors.client import VideoClient
    from connectors.errors import AuthError, VideoApiError
    from tasks.preflight import check_service

    client = VideoClient.from_settings(settings, limiter=limiter)
    try:
        check_service(client, settings)
    except AuthError as exc:
        raise _fail(str(exc)) from None
    except VideoApiError:
        pass  # the run's own preflight tries again and says what it found
    finally:
        client.close()


migrate.__signature__ = _migrate_signature()  # type: ignore[attr-defined]
app.command()(migrate)


def _print_outcome(result: dict[str, Any]) -> None:
    from tasks.report import summary_lines

    if result.get("summary"):
        for line in summary_lines(result["summary"]):
            typer.echo(line)
    for line in result.get("reasons", []):
        typer.echo(line)
    if result.get("report_files"):
        typer.echo("report: " + ", ".join(result["report_files"]))
    typer.echo("ok: every item is done" if result["exit_code"] == 0 else f"exit status {result['exit_code']}")


@app.command()
def status(
    ledger: str = typer.Option(DEFAULT_LEDGER, envvar="VIDEOFERRY_LEDGER", help="The ledger file."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    failures: int = typer.Option(20, help="How many failed items (and failed operations) to list."),
) -> None:
    """Show where every item and operation stands (reads the ledger only; no API call, no Prefect)."""
    from state.errors import LedgerError
    from state.ledger import Ledger
    from tasks.archive_report import archive_summary
    from tasks.report import summary_lines
    from tasks.report_ops import failed_lines, operations_complete, operations_frame, operations_summary

    try:
        book = Ledger.open(ledger, create=False)
    except LedgerError as exc:
        raise _fail(str(exc)) from None
    try:
        summary = book.summary()
        bad = book.items(["failed", "error", "aborted"], limit=failures)
        runs = book.runs()
        units = book.units()
        archive = archive_summary(book)
    finally:
        book.close()
    operations = operations_summary(units)
    if operations:
        summary["operations"] = operations
    if archive:
        summary["archive"] = archive
    if as_json:
        typer.echo(json.dumps(summary, default=str, indent=2))
        return
    for line in summary_lines(summary):
        typer.echo(line)
    if runs:
        last = runs[-1]
        typer.echo(f"last run: {last.run_id} {last.status}")
    for item in bad:
        where = f"row {item.spec.row}"
        typer.echo(f"  {item.key} ({where}): {item.state} {item.error_code}: {item.error_message}")
    for line in failed_lines(operations_frame(units), failures):
        typer.echo(f"  {line}")
    counts = summary.get("counts", {})
    complete = counts.get("done", 0) + counts.get("finished", 0)
    archived = not (archive and archive["failed"])
    everything = complete == summary.get("items", 0) and operations_complete(summary) and archived
    raise typer.Exit(0 if everything else 1)


@app.command("report")
def report_cmd(
    ledger: str = typer.Option(DEFAULT_LEDGER, envvar="VIDEOFERRY_LEDGER", help="The ledger file."),
    fmt: list[str] = typer.Option(  # noqa: B008 - typer's declaration style
        list(REPORT_FORMATS), "--format", "-f", help="csv, parquet, json or html (repeatable)."
    ),
    out: str = typer.Option("videoferry-report", help="Directory for the report files."),
) -> None:
    """Write the item and operation tables and the summary of a ledger (reads the ledger only)."""
    bad = [f for f in fmt if f not in REPORT_FORMATS]
    if bad:
        raise _fail(f"unknown format {bad[0]!r} (use {', '.join(REPORT_FORMATS)})")
    from flows.runner import report_only
    from state.errors import LedgerError
    from tasks.report import summary_lines

    try:
        report, files = report_only(ledger, out, tuple(fmt))
    except LedgerError as exc:
        raise _fail(str(exc)) from None
    for line in summary_lines(report.summary):
        typer.echo(line)
    for path in files:
        typer.echo(f"wrote {path}")


@app.command()
def apply(
    ops: str = typer.Argument(..., help="The operations file: a path or s3:// (connectors/OPERATIONS.md)."),
    ledger: str = typer.Option(
        DEFAULT_LEDGER,
        envvar="VIDEOFERRY_LEDGER",
        help="The ledger: key: targets are read from it, and the operations are recorded in it.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print what each row would do to which video; no write call, no ledger write.",
    ),
    allow_delete: bool = typer.Option(False, "--allow-delete", help="Let delete rows run."),
    transfers: int = typer.Option(4, min=1, max=32, help="Operations run at once."),
    report: str | None = typer.Option(
        None, help="Write the report (CSV, Parquet, JSON, HTML) into this dir."
    ),
    poll_interval: float = typer.Option(
        5.0, min=0.1, help="Seconds between two status reads of one processing video (the spec: at least 5)."
    ),
    wait_timeout: float = typer.Option(3600.0, min=1.0, help="Stop waiting for processing after this long."),
    no_prefect: bool = typer.Option(
        False, "--no-prefect", help="Run without the Prefect engine (the same runner, plain threads)."
    ),
) -> None:
    """Apply an operations file to the library: each operation exactly once, in dependency order."""
    from pathlib import Path

    from connectors.config import ConfigError, Settings
    from connectors.errors import AuthError
    from connectors.operations import OperationsError, read_operations
    from connectors.s3 import S3Config
    from flows.apply_runner import ApplyOptions
    from state.errors import LedgerBusyError, LedgerError
    from state.ledger import Ledger

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if not dry_run:
        options = ApplyOptions(
            ops=ops,
            ledger=ledger,
            transfers=transfers,
            allow_delete=allow_delete,
            report_dir=report,
            poll_interval=poll_interval,
            wait_timeout=wait_timeout,
        )
        try:
            outcome = _run_apply(options, settings, prefect=not no_prefect)
        except (OperationsError, LedgerBusyError, LedgerError) as exc:
            raise _fail(str(exc)) from None
        for line in [*outcome.refused, *outcome.reasons]:
            typer.echo(line)
        counts = ", ".join(f"{n} {s}" for s, n in outcome.counts.items()) or "none"
        typer.echo(
            f"operations: {sum(outcome.counts.values())} ({counts}), {len(outcome.refused)} rows refused"
        )
        for path in outcome.report_files:
            typer.echo(f"wrote {path}")
        raise typer.Exit(outcome.exit_code)
    from connectors.client import VideoClient
    from tasks.apply_plan import resolve_plan

    try:
        operations = read_operations(ops, s3=S3Config.from_env())
        book = Ledger.open(ledger, create=False) if Path(ledger).expanduser().exists() else None
    except (OperationsError, LedgerError) as exc:
        raise _fail(str(exc)) from None
    try:
        with VideoClient.from_settings(settings) as client:
            plan = resolve_plan(operations, book, client)
    except AuthError as exc:
        raise _fail(f"the service refused the token (VIDEOFERRY_TOKEN): {exc}") from None
    finally:
        if book is not None:
            book.close()
    for line in plan.lines(allow_delete=allow_delete):
        typer.echo(line)
    raise typer.Exit(plan.exit_code)


def _run_apply(options: Any, settings: Any, *, prefect: bool) -> Any:
    """The apply run: through the Prefect flow (default) or the plain runner."""
    if prefect:
        from flows.apply_flow import apply_flow
        from flows.apply_runner import ApplyOutcome

        state = apply_flow(
            **dataclasses.asdict(options),
            api_url=settings.api_url,
            upload_url=settings.upload_url,
            return_state=True,
        )
        result = state.result(raise_on_failure=False)  # a Failed run (exit status 1/2) still carries it
        if isinstance(result, BaseException):
            raise result
        assert isinstance(result, dict)
        return ApplyOutcome(**result)
    from flows.apply_runner import run_apply

    return run_apply(options, settings)


@app.command()
def emulator(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8080, help="Port of the API host ({base_url})."),
    upload_port: int = typer.Option(8081, help="Port of the upload host ({upload_url})."),
    variant: list[str] | None = typer.Option(  # noqa: B008 - typer's declaration style
        None,
        "--variant",
        help="Make another plausible choice where the spec is silent (repeatable; emulator/README.md).",
    ),
) -> None:
    """Run the local emulator of the video service until interrupted."""
    from emulator.server import serve_forever

    try:
        serve_forever(host=host, port=port, upload_port=upload_port, variants=variant or ())
    except ValueError as exc:
        typer.echo(f"videoferry emulator: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def demo(
    items: int = typer.Option(30, min=1, max=500, help="How many clips to make and migrate."),
    workdir: str | None = typer.Option(
        None, help="Where to put clips, ledger and report (default: a temp dir)."
    ),
    transfers: int = typer.Option(4, min=1, max=32, help="Items transferred at once."),
) -> None:
    """Start the emulator, make short real clips and migrate them through the real Prefect engine."""
    from flows.demo import run_demo

    raise typer.Exit(run_demo(items=items, workdir=workdir, transfers=transfers))


# The jobs' commands live in their own modules and register themselves on `app` when imported.
from flows import cli_archive, cli_check, cli_setup  # noqa: E402, F401


def main() -> None:
    """Entry point of the `videoferry` console script."""
    # This workplace, like many migration hosts, has no route out: Prefect's telemetry would only log errors.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted; rerun the same command to resume", err=True)
        sys.exit(130)


if __name__ == "__main__":
    # `python -m flows.cli` runs this file as __main__, a second copy beside the module `flows.cli` on whose
    # `app` the jobs' modules register their commands: run that one.
    from flows.cli import main as registered_main

    registered_main()
