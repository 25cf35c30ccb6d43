"""The check options, declared once: the command line, the runner and the Prefect flow follow them."""

from __future__ import annotations

from dataclasses import dataclass, field

from flows.options import Cli, about, ledger_option, report_option


@dataclass(frozen=True)
class CheckOptions:
    """What one check is asked to do (the command line's options)."""

    inventory: str = field(
        metadata=about(
            "The inventory the library was migrated from (path or s3://), or its platform source (vimeo:,"
            " mux:...).",
            Cli(argument=True, metavar="INVENTORY"),
        )
    )
    ledger: str = ledger_option(
        "The migration's ledger: items are found by its video ids (without one, by title and size)."
    )
    parent_id: str | None = field(
        default=None,
        metadata=about("Project or folder of rows without parent_id.", Cli(metavar="ID")),
    )
    parent_map: list[str] | None = field(
        default=None,
        metadata=about(
            "Rows whose parent_id is OLD are checked under NEW (comma-separated or repeated): as the"
            " restore's migrate --parent-map put them.",
            Cli(metavar="OLD=NEW,OLD=NEW"),
        ),
    )
    download_md5: bool = field(
        default=False,
        metadata=about("Hash the original's download when the service gives no md5."),
    )
    combined: str | None = field(
        default=None,
        metadata=about("Also write the combined lines (=, -, +, *, !) here.", Cli(metavar="FILE")),
    )
    one_way: bool = field(
        default=False,
        metadata=about(
            "Only check that every inventory item is in the service as it should be; do not look for videos"
            " only in the service (no `+` lines). By default `+` covers the parents the inventory writes to"
            " (a project's own videos, not those in its folders; a folder's).",
        ),
    )
    playable: bool = field(
        default=False,
        metadata=about(
            "Also prove every migrated video plays: its item done in the ledger, the video done with a"
            " play_link, its duration the source's within max(1 s, 2 %) (the inventory's duration column,"
            " else probed from the file or S3 object). One that does not is `*` naming `playable`.",
        ),
    )
    report_dir: str | None = report_option()
    adopt: bool = field(
        default=False,
        metadata=about(
            "Record in the ledger the items' videos (exact title in their parent); no service write.",
        ),
    )
    reupload_unproven: bool = field(
        default=False,
        metadata=about(
            "With --adopt: adopt only videos whose bytes prove them; leave the rest to migrate, which uploads"
            " them again (by default a video under the item's title is adopted or the item held).",
        ),
    )
    rewrite_differing: bool = field(
        default=False,
        metadata=about(
            "With --adopt: let migrate write the row's description, tags, privacy and chapters over an"
            " adopted video's that differ (by default the service's are kept: apply may have set them).",
        ),
    )
