"""The migrate options, declared once: the command line, the runner, the flow and prefect.yaml follow them."""

from __future__ import annotations

from dataclasses import dataclass, field

from videoferry.connectors.config import ConfigError
from videoferry.core.item import VIA_CHOICES
from videoferry.flows.options import (
    Cli,
    about,
    check_least,
    chunk_option,
    dry_run_option,
    ledger_option,
    poll_interval_option,
    report_option,
    transfers_option,
    wait_timeout_option,
)


@dataclass
class MigrateOptions:
    """What a migration is asked to do: the plain runner's input, and the command line's options and the
    Prefect flow's parameters (flows/options.py).

    wait_timeout: seconds after which the run stops waiting for processing (None: no bound; 0: stop once
    nothing is being transferred; at the entry points 0 means no bound). retry_errors: requeue items the
    service failed (error/aborted).
    """

    inventory: str = field(
        metadata=about(
            "CSV, Parquet or JSON Lines inventory (path or s3://bucket/key), s3://bucket/prefix/, or a"
            " platform: vimeo:, vimeo:folder/ID, wistia:, wistia:project/ID, mux:, cloudflare:, apivideo:,"
            " bunny:LIBRARY, youtube-takeout:PATH.",
            Cli(argument=True, metavar="INVENTORY"),
        )
    )
    parent_id: str | None = field(
        default=None, metadata=about("Project or folder for rows without parent_id.", Cli(metavar="ID"))
    )
    parent_map: list[str] | None = field(
        default=None,
        metadata=about(
            "Put the rows whose parent_id is OLD under NEW instead (comma-separated or repeated): a"
            " backup restored into another workspace, whose folders have other ids.",
            Cli(metavar="OLD=NEW,OLD=NEW"),
        ),
    )
    folder_map: str | None = field(
        default=None,
        metadata=about(
            "Vimeo and Wistia only: a CSV of folder (a source folder's or project's id or"
            " name) and parent_id (the target project or folder); videos of other folders go under"
            " --parent-id.",
            Cli(metavar="FILE"),
        ),
    )
    captions: str | None = field(
        default=None,
        metadata=about(
            "Vimeo and Wistia only: fetch each video's captions into DIR (kept for the"
            " reruns) and attach them to its video as additional materials (the service's API cannot set"
            " subtitles).",
            Cli(metavar="DIR"),
        ),
    )
    include: list[str] | None = field(
        default=None,
        metadata=about(
            "s3://bucket/prefix/ only: take the video files this rclone glob matches (repeated for more, not"
            " comma-separated: commas belong to globs, {a,b}; default: every video file; other files are"
            " refused, whatever the glob).",
            Cli(metavar="GLOB"),
        ),
    )
    exclude: list[str] | None = field(
        default=None,
        metadata=about(
            "s3://bucket/prefix/ only: leave out the objects this rclone glob matches (repeated for more).",
            Cli(metavar="GLOB"),
        ),
    )
    ignore_case: bool = field(
        default=False,
        metadata=about("--include / --exclude match regardless of case (rclone's --ignore-case)."),
    )
    ledger: str = ledger_option()
    transfers: int = transfers_option(4, "Items transferred at once.")
    via: str = field(
        default="auto",
        metadata=about(
            "auto (tus for files and S3, URL import for http), tus, url, single.",
            Cli(metavar="auto|tus|url|single"),
        ),
    )
    dry_run: bool = dry_run_option("Print the plan; no API call, no write.", flow=True)
    report_dir: str | None = report_option("Write CSV, Parquet, JSON and HTML reports here.")
    webhook_listen: str | None = field(
        default=None,
        metadata=about(
            "Receive media.update.status webhooks here (list polls become a rare safety net).",
            Cli(metavar="HOST:PORT"),
        ),
    )
    poll_interval: float = poll_interval_option()
    wait_timeout: float | None = wait_timeout_option()
    chunk_size: int = chunk_option()
    retry_failed: bool = field(
        default=True,
        metadata=about(
            "Requeue items that failed in an earlier run (always on at the entry points).",
            command_line=False,
            flow=False,
        ),
    )
    retry_errors: bool = field(
        default=False,
        metadata=about("Also migrate again items the service failed (processing error/aborted)."),
    )
    dask: str | None = field(
        default=None,
        metadata=about(
            "Scheduler address of a Dask cluster whose workers send the bytes of tus uploads; this"
            " process keeps the ledger and every API call.",
            Cli(metavar="tcp://HOST:PORT"),
        ),
    )
    shard: str | None = field(
        default=None,
        metadata=about(
            "Only the items whose key falls in shard K of N (N coordinators split one inventory;"
            " give each its own ledger and one VIDEOFERRY_LIMITER_URL).",
            Cli(metavar="K/N"),
        ),
    )

    def __post_init__(self) -> None:
        check_least(self)  # --poll-interval at least the service's rule, however the options were made

    def check(self) -> None:
        """Raise ConfigError (exit status 2) for options that cannot work."""
        if self.via not in VIA_CHOICES:
            raise ConfigError(f"--via must be one of {', '.join(VIA_CHOICES)}, not {self.via!r}")
        if self.shard:
            from videoferry.core.item import parse_shard

            try:
                parse_shard(self.shard)
            except ValueError as exc:
                raise ConfigError(f"--shard: {exc}") from None
