"""The apply options, declared once: the command line, the runner, the flow and prefect.yaml follow them."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class ApplyOptions:
    """What one apply run is asked to do (the command line's options and the flow's parameters)."""

    ops: str = field(
        metadata=about(
            "The operations file: a path or s3:// (videoferry/connectors/OPERATIONS.md).",
            Cli(argument=True, metavar="OPS"),
        )
    )
    ledger: str = ledger_option(
        "The ledger: key: targets are read from it, and the operations are recorded in it."
    )
    dry_run: bool = dry_run_option(
        "Print what each row would do to which video; no write call, no ledger write."
    )
    transfers: int = transfers_option(4, "Operations run at once.")
    allow_delete: bool = field(
        default=False, metadata=about("Let delete rows run (without it they are refused and reported).")
    )
    report_dir: str | None = report_option()
    poll_interval: float = poll_interval_option(
        "Seconds between two status reads of one processing video (at least 5: the service's rule)."
    )
    wait_timeout: float | None = wait_timeout_option()
    chunk_size: int = chunk_option(
        "first tus chunk in MiB (chunks double up to 128 MiB while the link holds); a replace's file of at "
        "least one chunk goes by tus, resumable."
    )

    def __post_init__(self) -> None:
        check_least(self)  # --poll-interval at least the service's rule, however the options were made
