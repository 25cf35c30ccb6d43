"""The check options, declared once: the command line and the runner follow them (check has no flow)."""

from __future__ import annotations

from dataclasses import dataclass, field

from flows.options import Cli, about, ledger_option, report_option


@dataclass(frozen=True)
class CheckOptions:
    """What one check is asked to do (the command line's options)."""

    inventory: str = field(
        metadata=about(
            "The inventory the library was migrated from (path or s3://).",
            Cli(argument=True, metavar="INVENTORY"),
            flow=False,
        )
    )
    ledger: str = ledger_option(
        "The migration's ledger: items are found by its video ids (without one, by title and size)."
    )
    parent_id: str | None = field(
        default=None,
        metadata=about("Project or folder of rows without parent_id.", Cli(metavar="ID"), flow=False),
    )
    download_md5: bool = field(
        default=False,
        metadata=about("Hash the original's download when the service gives no md5.", flow=False),
    )
    combined: str | None = field(
        default=None,
        metadata=about(
            "Also write the combined lines (=, -, +, *, !) here.", Cli(metavar="FILE"), flow=False
        ),
    )
    report_dir: str | None = report_option()
    adopt: bool = field(
        default=False,
        metadata=about(
            "Record in the ledger the videos that provably are items' (title and bytes); no service write.",
            flow=False,
        ),
    )
