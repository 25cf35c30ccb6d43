"""Run one `videoferry inventory`: check the platform's access, list the source, write the inventory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from videoferry.connectors.config import ConfigError
from videoferry.connectors.platforms.base import PlatformConfigError, PlatformError
from videoferry.connectors.platforms.listing import (
    FORMATS,
    list_source,
    parse_platform_source,
    platform_client,
    write_inventory,
)
from videoferry.flows.inventory.options import InventoryOptions
from videoferry.tasks.service import blocks_env


@dataclass
class InventoryOutcome:
    """How the command ends: its exit status and the lines it prints (stdout, then the error line)."""

    exit_code: int
    lines: list[str] = field(default_factory=list)
    error: str | None = None


def run_inventory(opts: InventoryOptions, env: Mapping[str, str] | None = None) -> InventoryOutcome:
    """List the source and write the inventory: exit 0 when written, 2 for settings to fix (source form,
    token, scopes, plan, folder, --out), 1 when the listing could not be finished (nothing written)."""
    try:
        env = blocks_env(env)  # a source's token from its block (VIDEOFERRY_VIMEO_BLOCK...), when named
        source = parse_platform_source(opts.source)
        out = Path(opts.out).expanduser()
        if out.suffix.lower() not in FORMATS:
            raise PlatformConfigError(f"--out {opts.out}: the inventory is written as {' or '.join(FORMATS)}")
        if not out.parent.is_dir():
            raise PlatformConfigError(f"--out {opts.out}: no directory {out.parent}")
        with platform_client(source, env) as client:
            listing = list_source(source, client, chapters=not opts.no_chapters)
        rows = write_inventory(listing.videos, out)
    except (PlatformConfigError, ConfigError) as exc:
        return InventoryOutcome(2, error=str(exc))
    except PlatformError as exc:
        return InventoryOutcome(1, error=f"{exc}; nothing was written")
    lines = [
        *listing.notes,
        f"listed {rows} videos from {source} in {listing.calls} calls",
        f"wrote {out}",
    ]
    return InventoryOutcome(0, lines)
