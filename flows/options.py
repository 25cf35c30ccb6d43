"""The migrate options, declared once: the command line, the runner, the flow and prefect.yaml follow them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# No heavy import here: the command line reads this module before it knows whether it runs anything.
from connectors.config import DEFAULT_CHUNK_SIZE

DEFAULT_LEDGER = "videoferry-ledger.db"
#: How long a run waits for the service to finish processing by default (seconds). A long video can take tens
#: of minutes to process; one still in uploading/processing after an hour is most likely stuck, and a run that
#: waits forever never reports. A rerun keeps waiting (nothing is uploaded again).
DEFAULT_WAIT_TIMEOUT = 3600.0
VIAS = ("auto", "tus", "url", "single")
MIB = 1024 * 1024


@dataclass(frozen=True)
class Cli:
    """How an option shows on the command line where it is not simply `--name VALUE`.

    name: the command line's own name (when it counts in another unit: chunk_mib); flag: its flag (--report);
    argument: positional; unit: the option's value is the command line's value times unit; min / max: bounds
    the command line checks; envvar: the environment variable the command line falls back to.
    """

    name: str | None = None
    flag: str | None = None
    argument: bool = False
    unit: int = 1
    min: float | None = None
    max: float | None = None
    envvar: str | None = None


def about(
    help: str, cli: Cli | None = None, *, entry: bool = True, zero_is_none: bool = False
) -> dict[str, Any]:
    """A field's metadata: its help, its command line form, whether the command line and the flow take it
    (entry) and whether 0 given there means None (no bound)."""
    return {"help": help, "cli": cli or Cli(), "entry": entry, "zero_is_none": zero_is_none}


@dataclass
class MigrateOptions:
    """What a migration is asked to do: the plain runner's input, and (entry fields) the command line's
    options and the Prefect flow's parameters.

    wait_timeout: seconds after which the run stops waiting for processing (None: no bound; 0: stop once
    nothing is being transferred; at the entry points 0 means no bound). retry_errors: requeue items the
    service failed (error/aborted).
    """

    inventory: str = field(
        metadata=about(
            "CSV, Parquet or JSON Lines inventory (path or s3://bucket/key), or s3://bucket/prefix/.",
            Cli(argument=True),
        )
    )
    parent_id: str | None = field(
        default=None, metadata=about("Project or folder for rows without parent_id.")
    )
    ledger: str = field(
        default=DEFAULT_LEDGER, metadata=about("The ledger file.", Cli(envvar="VIDEOFERRY_LEDGER"))
    )
    transfers: int = field(default=4, metadata=about("Items transferred at once.", Cli(min=1, max=64)))
    via: str = field(
        default="auto", metadata=about("auto (tus for files and S3, URL import for http), tus, url, single.")
    )
    dry_run: bool = field(default=False, metadata=about("Print the plan; no API call, no write."))
    report_dir: str | None = field(
        default=None, metadata=about("Write CSV, Parquet, JSON and HTML reports here.", Cli(flag="--report"))
    )
    webhook_listen: str | None = field(
        default=None,
        metadata=about(
            "HOST:PORT to receive media.update.status webhooks (list polls become a rare safety net)."
        ),
    )
    poll_interval: float = field(
        default=5.0, metadata=about("Seconds between status polls (at least 5).", Cli(min=5.0))
    )
    wait_timeout: float | None = field(
        default=DEFAULT_WAIT_TIMEOUT,
        metadata=about(
            "Stop waiting for processing after this many seconds (0: no bound); a rerun keeps waiting.",
            Cli(min=0.0),
            zero_is_none=True,
        ),
    )
    chunk_size: int = field(
        default=DEFAULT_CHUNK_SIZE,
        metadata=about("tus chunk size in MiB.", Cli(name="chunk_mib", unit=MIB, min=1)),
    )
    retry_failed: bool = field(
        default=True,
        metadata=about(
            "Requeue items that failed in an earlier run (always on at the entry points).", entry=False
        ),
    )
    retry_errors: bool = field(
        default=False,
        metadata=about("Also migrate again items the service failed (processing error/aborted)."),
    )
    dask: str | None = field(
        default=None,
        metadata=about(
            "Scheduler address (tcp://host:port) of a Dask cluster whose workers send the bytes of tus"
            " uploads; this process keeps the ledger and every API call."
        ),
    )
    shard: str | None = field(
        default=None,
        metadata=about(
            "K/N: only the items whose key falls in shard K of N (N coordinators split one inventory;"
            " give each its own ledger and one VIDEOFERRY_LIMITER_URL)."
        ),
    )

    def params(self) -> dict[str, Any]:
        """The entry fields' values: the flow's parameters for these options."""
        return {f.name: getattr(self, f.name) for f in entry_fields(MigrateOptions)}


@dataclass(frozen=True)
class ServiceOptions:
    """Where the service is, when not read from the environment. Never the token: it comes only from
    VIDEOFERRY_TOKEN (the Prefect server stores parameters, prefect.yaml is committed)."""

    api_url: str | None = field(
        default=None, metadata=about("{base_url} of the service.", Cli(envvar="VIDEOFERRY_API_URL"))
    )
    upload_url: str | None = field(
        default=None, metadata=about("{upload_url} of the service.", Cli(envvar="VIDEOFERRY_UPLOAD_URL"))
    )


#: The declarations the command line and the flow take, in the order of their options and parameters.
ENTRY_DECLARATIONS: tuple[type, ...] = (MigrateOptions, ServiceOptions)


def entry_fields(*declarations: type) -> list[dataclasses.Field[Any]]:
    """The fields the command line and the flow take (all declarations when none is named), in order."""
    return [
        f
        for declaration in declarations or ENTRY_DECLARATIONS
        for f in dataclasses.fields(declaration)
        if f.metadata["entry"]
    ]


def from_params(values: Mapping[str, Any]) -> tuple[MigrateOptions, ServiceOptions]:
    """Options from the values of the entry fields (the flow's parameters); 0 means None where declared."""
    given: dict[str, Any] = {
        f.name: (None if f.metadata["zero_is_none"] and not values[f.name] else values[f.name])
        for f in entry_fields()
        if f.name in values
    }
    migrate = {f.name: given[f.name] for f in entry_fields(MigrateOptions) if f.name in given}
    service = {f.name: given[f.name] for f in entry_fields(ServiceOptions) if f.name in given}
    return MigrateOptions(**migrate), ServiceOptions(**service)
