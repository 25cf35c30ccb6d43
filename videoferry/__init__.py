"""videoferry as a Python library: a typed function per job, its options and outcomes, blocks and errors.

    import videoferry

    outcome = videoferry.migrate("inventory.csv", parent_id="...", ledger="ledger.db")
    assert outcome.exit_code == 0, outcome.reasons

Each function takes its command's options by name (the same declarations: flows/<job>/options.py), runs
the job through its Prefect flow (a subflow when called inside a flow; a flow run of its own when a Prefect
server is configured, or prefect=True) or plainly, and returns the job's outcome (exit_code: what the command
would exit with; a dry run of apply, archive or backup returns a Preview). The command line calls these same
functions (flows/cli). Configuration to fix raises ConfigurationError; a run stopped early raises
RunStopped; both are VideoferryError (videoferry.errors). The service's token comes from VIDEOFERRY_TOKEN or
a credentials block (videoferry.blocks), never from an argument. docs/python-api.md has the details.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from videoferry.errors import ConfigurationError, RunStopped, VideoferryError
    from videoferry.flows.apply.options import ApplyOptions
    from videoferry.flows.archive.options import ArchiveOptions
    from videoferry.flows.backup.options import BackupOptions
    from videoferry.flows.check.options import CheckOptions
    from videoferry.flows.links.options import EmbedsOptions, LinksOptions
    from videoferry.flows.migrate.options import MigrateOptions
    from videoferry.flows.setup.options import DrmCheckOptions, SetupOptions
    from videoferry.jobs import (
        Preview,
        apply,
        archive,
        backup,
        check,
        drm_check,
        links,
        migrate,
        rewrite_embeds,
        setup,
    )

# Where each public name lives: imported on first use (PEP 562), so `python -m videoferry.emulator` or a
# module of the package does not load Prefect and every job's flow first.
_HOMES = {
    "ApplyOptions": "videoferry.flows.apply.options",
    "ArchiveOptions": "videoferry.flows.archive.options",
    "BackupOptions": "videoferry.flows.backup.options",
    "CheckOptions": "videoferry.flows.check.options",
    "ConfigurationError": "videoferry.errors",
    "DrmCheckOptions": "videoferry.flows.setup.options",
    "EmbedsOptions": "videoferry.flows.links.options",
    "LinksOptions": "videoferry.flows.links.options",
    "MigrateOptions": "videoferry.flows.migrate.options",
    "Preview": "videoferry.jobs",
    "RunStopped": "videoferry.errors",
    "SetupOptions": "videoferry.flows.setup.options",
    "VideoferryError": "videoferry.errors",
    "apply": "videoferry.jobs",
    "archive": "videoferry.jobs",
    "backup": "videoferry.jobs",
    "check": "videoferry.jobs",
    "drm_check": "videoferry.jobs",
    "links": "videoferry.jobs",
    "migrate": "videoferry.jobs",
    "rewrite_embeds": "videoferry.jobs",
    "setup": "videoferry.jobs",
}

__all__ = [
    "ApplyOptions",
    "ArchiveOptions",
    "BackupOptions",
    "CheckOptions",
    "ConfigurationError",
    "DrmCheckOptions",
    "EmbedsOptions",
    "LinksOptions",
    "MigrateOptions",
    "Preview",
    "RunStopped",
    "SetupOptions",
    "VideoferryError",
    "apply",
    "archive",
    "backup",
    "check",
    "drm_check",
    "links",
    "migrate",
    "rewrite_embeds",
    "setup",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names beside the module's own."""
    return sorted(set(globals()) | set(_HOMES))
