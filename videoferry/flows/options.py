"""Options declared once per job (a dataclass whose fields carry their help, command line form and bounds),
and the options every job shares: the command line, the flow and prefect.yaml follow the declarations.

A job's options (flows/<job>/options.py) is a dataclass; each field's metadata (about()) says its help, how
it shows on the command line (Cli), whether the Prefect flow takes it, and whether 0 means None (no bound).
The command line's parameters are derived from it (flows/cli/app.py), the flow's parameters are written out
in the flow and checked against it (tests/flows/test_prefect_yaml.py, with prefect.yaml's deployments), and
options_from_params() builds the options back from a flow's parameters, bounds checked. The same idea has
the same name, unit and bound in every job: ledger_option(), report_option(), transfers_option(),
poll_interval_option(), wait_timeout_option(), dry_run_option() and ServiceOptions (--api-url, --upload-url).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

# No heavy import here: the command line reads this module before it knows whether it runs anything.
from videoferry.connectors.config import DEFAULT_CHUNK_SIZE, POLL_RULE_SECONDS, ConfigError

#: The ledger's file when --ledger / VIDEOFERRY_LEDGER does not say (every job's default).
DEFAULT_LEDGER = "videoferry-ledger.db"
#: How long a run waits for the service to finish processing by default (seconds). A long video can take tens
#: of minutes to process; one still in uploading/processing after an hour is most likely stuck, and a run that
#: waits forever never reports. A rerun keeps waiting (nothing is uploaded again).
DEFAULT_WAIT_TIMEOUT = 3600.0
#: The spec allows one status poll of a video per 5 s (and one list poll per 5 s).
MIN_POLL_SECONDS = POLL_RULE_SECONDS
#: The most transfers (items, operations, recordings) a run makes at once.
MAX_TRANSFERS = 64
MIB = 1024 * 1024

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class Cli:
    """How an option shows on the command line where it is not simply `--name VALUE`.

    name: the command line's own name (when it counts in another unit: chunk_mib); flag: its flag (--report);
    argument: positional; unit: the option's value is the command line's value times unit; min / max: the
    command line's bounds (in its unit); envvar: the environment variable the command line falls back to;
    commas: a list, given comma-separated and/or repeated (`--tags a,b --tags c`), the option holds the list;
    metavar: what `--help` shows for the value (`--ledger PATH`; default: the option's name in capitals;
    flags show none); aliases: old names still accepted, not shown in --help (docs/reference/command-line.md).
    """

    name: str | None = None
    flag: str | None = None
    argument: bool = False
    unit: int = 1
    min: float | None = None
    max: float | None = None
    envvar: str | None = None
    commas: bool = False
    metavar: str | None = None
    aliases: tuple[str, ...] = ()


def about(
    help: str,
    cli: Cli | None = None,
    *,
    command_line: bool = True,
    flow: bool = True,
    zero_is_none: bool = False,
    at_least: float | None = None,
) -> dict[str, Any]:
    """A field's metadata: its help, its command line form (command_line False: not on the command line),
    whether the Prefect flow takes it, whether 0 given there means None (no bound), and the least value the
    service allows (checked wherever options come in: the command line and a flow's parameters)."""
    return {
        "help": help,
        "cli": (cli or Cli()) if command_line else None,
        "flow": flow,
        "zero_is_none": zero_is_none,
        "at_least": at_least,
    }


# -- the options every job shares: one name, one unit, one bound -----------------------------------------


#: What every job's --ledger help ends with: where a ledger can live.
LEDGER_WHERE = " A file, or s3://bucket/key: a remote ledger (locked, replicated; docs/remote-ledger.md)."


def ledger_option(help: str = "The ledger.") -> Any:
    """--ledger PATH|s3://bucket/key (VIDEOFERRY_LEDGER): the ledger of the run (DEFAULT_LEDGER when none is
    given); s3:// is a remote ledger (flows/job.run_job holds it for the run)."""
    return field(
        default=DEFAULT_LEDGER,
        metadata=about(help + LEDGER_WHERE, Cli(envvar="VIDEOFERRY_LEDGER", metavar="PATH|s3://BUCKET/KEY")),
    )


def report_option(
    help: str = "Write the report files (CSV, Parquet, JSON, HTML) into this directory.",
) -> Any:
    """--report DIR: where the run's report files go (None: no report)."""
    return field(default=None, metadata=about(help, Cli(flag="--report", metavar="DIR")))


def transfers_option(default: int, help: str) -> Any:
    """--transfers N: how many at once (1 to MAX_TRANSFERS; the default is the job's own)."""
    return field(default=default, metadata=about(help, Cli(min=1, max=MAX_TRANSFERS, metavar="N")))


def poll_interval_option(help: str = "Seconds between status polls (at least 5: the service's rule).") -> Any:
    """--poll-interval S: seconds between status polls, at least MIN_POLL_SECONDS (the spec)."""
    return field(
        default=MIN_POLL_SECONDS,
        metadata=about(help, Cli(min=MIN_POLL_SECONDS, metavar="S"), at_least=MIN_POLL_SECONDS),
    )


def wait_timeout_option() -> Any:
    """--wait-timeout S: stop waiting for processing after S seconds (0: no bound; a rerun keeps waiting)."""
    return field(
        default=DEFAULT_WAIT_TIMEOUT,
        metadata=about(
            "Stop waiting for processing after this many seconds (0: no bound); a rerun keeps waiting.",
            Cli(min=0.0, metavar="S"),
            zero_is_none=True,
        ),
    )


def chunk_option(
    help: str = "first tus chunk in MiB; while the link holds, chunks double up to 128 MiB.",
) -> Any:
    """--chunk-mib MIB: the first tus chunk (DEFAULT_CHUNK_SIZE; migrate's uploads, apply's big replaces)."""
    return field(
        default=DEFAULT_CHUNK_SIZE,
        metadata=about(help, Cli(name="chunk_mib", unit=MIB, min=1, metavar="MIB")),
    )


def dry_run_option(help: str, *, flow: bool = False) -> Any:
    """--dry-run: say what the run would do; no write anywhere (flow: the flow takes it too)."""
    return field(default=False, metadata=about(help, flow=flow))


#: S3 multipart parts of the copies (archive, backup): 8 MiB by default, at least 5 MiB (S3's own minimum).
DEFAULT_PART_MIB = 8
MIN_PART_MIB = 5


def destination_option() -> Any:
    """--to DIR | s3://bucket/prefix/: where a job's copies go (archive, backup; required)."""
    return field(
        metadata=about(
            "Destination: a local directory or s3://bucket/prefix/.",
            Cli(flag="--to", metavar="DIR|s3://BUCKET/PREFIX/"),
        )
    )


#: What every --since help ends with: the forms of its value (parse_since).
SINCE_FORMS = ": YYYY-MM-DD, an ISO time (UTC) or a look-back such as 36h or 7d."


def since_option(what: str) -> Any:
    """--since WHEN: only what `what` says happened since then (parse_since's forms; archive, backup)."""
    return field(default=None, metadata=about(what + SINCE_FORMS, Cli(metavar="WHEN")))


def part_size_option() -> Any:
    """--part-mib N: the copies' S3 multipart part size (the option holds bytes)."""
    return field(
        default=DEFAULT_PART_MIB * MIB,
        metadata=about(
            f"S3 multipart part size in MiB (at least {MIN_PART_MIB}).",
            Cli(name="part_mib", unit=MIB, min=MIN_PART_MIB, metavar="MIB"),
        ),
    )


#: The least retry_backoff (seconds): a deployment's 0 would send a failing copy's retries back to back.
MIN_RETRY_BACKOFF = 0.1


def retry_backoff_option() -> Any:
    """The seconds before a copy's first retry (not on the command line; the flow and tests set it)."""
    return field(
        default=0.5,
        metadata=about(
            f"Seconds before a copy's first retry (doubled each time; at least {MIN_RETRY_BACKOFF:g}).",
            command_line=False,
        ),
    )


def check_copies(to: str, part_size: int, since: str | None, retry_backoff: float) -> None:
    """The checks every copying job shares: a destination, a part size S3 takes, a readable --since, a
    retry_backoff of at least MIN_RETRY_BACKOFF (ConfigError, exit status 2)."""
    if not retry_backoff >= MIN_RETRY_BACKOFF:  # NaN too
        raise ConfigError(f"retry_backoff must be at least {MIN_RETRY_BACKOFF:g} s, not {retry_backoff!r}")
    if part_size < MIN_PART_MIB * MIB:
        raise ConfigError(f"--part-mib must be at least {MIN_PART_MIB}")
    if since is not None:
        parse_since(since)
    if not to or (to.startswith("s3://") and len(to) <= len("s3://")):
        raise ConfigError("--to needs s3://bucket/prefix/ or a directory")


@dataclass(frozen=True)
class ServiceOptions:
    """Where the service is, when not read from the environment (every command that calls it takes these).
    Never the token: it comes only from VIDEOFERRY_TOKEN (the Prefect server stores parameters, prefect.yaml
    is committed)."""

    api_url: str | None = field(
        default=None,
        metadata=about("The service's API address.", Cli(envvar="VIDEOFERRY_API_URL", metavar="URL")),
    )
    upload_url: str | None = field(
        default=None,
        metadata=about("The service's upload address.", Cli(envvar="VIDEOFERRY_UPLOAD_URL", metavar="URL")),
    )


# -- the declarations' fields, and the options back from their values ------------------------------------


def cli_fields(declaration: type, names: tuple[str, ...] | None = None) -> list[dataclasses.Field[Any]]:
    """The fields a declaration shows on the command line (only `names`, when given), in order."""
    return [
        f
        for f in dataclasses.fields(declaration)
        if f.metadata["cli"] is not None and (names is None or f.name in names)
    ]


def flow_fields(declaration: type) -> list[dataclasses.Field[Any]]:
    """The fields a declaration's Prefect flow takes as parameters, in order (ServiceOptions' after them)."""
    return [f for f in dataclasses.fields(declaration) if f.metadata["flow"]]


def options_from_params(
    declaration: type[OptionsT], values: Mapping[str, Any]
) -> tuple[OptionsT, ServiceOptions]:
    """The options from the values of its fields and ServiceOptions' (a flow's parameters, or the command
    line's in the options' units); names not declared are ignored, 0 means None where declared so.

    Raises ConfigError (exit status 2) for a value below the least the service allows (at_least), or one the
    options' own check() refuses.
    """
    found: dict[type, dict[str, Any]] = {}
    kinds: tuple[Any, ...] = (declaration, ServiceOptions)
    for kind in kinds:
        given = found.setdefault(kind, {})
        for spec in dataclasses.fields(kind):
            if spec.name not in values:
                continue
            value = values[spec.name]
            if spec.metadata["zero_is_none"] and not value:
                value = None
            _check_bounds(spec, value)
            given[spec.name] = value
    opts = declaration(**found[declaration])
    check = getattr(opts, "check", None)
    if callable(check):
        check()
    return opts, ServiceOptions(**found[ServiceOptions])


def check_least(opts: Any) -> None:
    """Raise ConfigError (exit status 2) for a field of these options below the least the service allows
    (at_least): options made in code are held to the service's rule like the command line's and a flow's."""
    for spec in dataclasses.fields(opts):
        _check_bounds(spec, getattr(opts, spec.name))


def _check_bounds(spec: dataclasses.Field[Any], value: Any) -> None:
    least = spec.metadata.get("at_least")
    if least is None or not isinstance(value, int | float) or value >= least:
        return
    cli: Cli | None = spec.metadata["cli"]
    flag = (cli.flag if cli is not None else None) or f"--{spec.name.replace('_', '-')}"
    raise ConfigError(f"{flag} must be at least {least:g}, not {value:g} (the service's rule)")


def params(opts: Any) -> dict[str, Any]:
    """The values of the fields a job's flow takes: the flow's parameters for these options."""
    return {f.name: getattr(opts, f.name) for f in flow_fields(type(opts))}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """YYYY-MM-DD (midnight UTC), an ISO 8601 moment (naive = UTC), or a look-back such as 36h or 7d."""
    back = re.fullmatch(r"(\d+)([hd])", text.strip())
    if back:
        amount = int(back.group(1))
        delta = timedelta(hours=amount) if back.group(2) == "h" else timedelta(days=amount)
        return (now or datetime.now(UTC)) - delta
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--since must be YYYY-MM-DD, an ISO 8601 time or 36h / 7d, not {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
