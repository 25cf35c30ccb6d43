"""The options of `links` and `rewrite-embeds`, declared once: the command line and runners follow them."""

from __future__ import annotations

from dataclasses import dataclass, field

from videoferry.connectors.config import ConfigError
from videoferry.flows.options import Cli, about, dry_run_option, ledger_option

#: --format's values (tasks/links/formats.FORMATS; not imported here: --help stays light).
LINK_FORMATS = ("csv", "json", "nginx", "apache")


@dataclass(frozen=True)
class LinksOptions:
    """What one `links` is asked to write."""

    ledger: str = ledger_option("The ledger of the migration (read only).")
    format: str = field(
        default="csv",
        metadata=about(
            "csv, json, nginx (a map block) or apache (a RewriteMap text file).",
            Cli(metavar="FORMAT"),
            flow=False,
        ),
    )
    out: str | None = field(
        default=None,
        metadata=about(
            "Write the map to this file (default: standard output).", Cli(metavar="FILE"), flow=False
        ),
    )

    def check(self) -> None:
        """Raise ConfigError (exit status 2) for a format there is none of."""
        if self.format not in LINK_FORMATS:
            raise ConfigError(f"--format {self.format!r}: use one of {', '.join(LINK_FORMATS)}")


@dataclass(frozen=True)
class EmbedsOptions:
    """What one `rewrite-embeds` is asked to rewrite."""

    paths: list[str] = field(
        metadata=about(
            "HTML, Markdown or text files, or folders (walked for .html, .htm, .md, .markdown, .mdx, .txt).",
            Cli(argument=True, metavar="PATH..."),
            flow=False,
        )
    )
    ledger: str = ledger_option("The ledger of the migration (read only).")
    dry_run: bool = dry_run_option("Print a unified diff and the counts; write nothing.")
