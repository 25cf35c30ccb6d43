"""The inventory options, declared once: the command line and the runner follow them (no flow)."""

from __future__ import annotations

from dataclasses import dataclass, field

from videoferry.flows.options import Cli, about


@dataclass(frozen=True)
class InventoryOptions:
    """What one `videoferry inventory` is asked to do (the command line's options)."""

    source: str = field(
        metadata=about(
            "The platform's library: vimeo: (the whole account), vimeo:folder/ID, wistia:,"
            " wistia:project/ID, mux:, cloudflare:, apivideo: or bunny:LIBRARY.",
            Cli(argument=True, metavar="SOURCE"),
            flow=False,
        )
    )
    out: str = field(
        metadata=about(
            "Write the inventory here (.csv or .jsonl); written whole, or not at all.",
            Cli(metavar="FILE"),
            flow=False,
        )
    )
    no_chapters: bool = field(
        default=False,
        metadata=about("Leave out Vimeo's chapters (reading them costs one call per video).", flow=False),
    )
