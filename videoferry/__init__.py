"""videoferry as a Python library: a typed function per job, its options and outcomes, blocks and errors.

    import videoferry

    outcome = videoferry.migrate("inventory.csv", parent_id="...", ledger="ledger.db")
    assert outcome.exit_code == 0, outcome.reasons

Each function takes its command's options by name (the same declarations: flows/<job>/options.py), runs the
job through its Prefect flow (a subflow when called inside a flow; a flow run of its own when a Prefect
server is configured, or prefect=True) or plainly, and returns the job's outcome (exit_code: what the command
would exit with; a dry run of apply, archive or backup returns a Preview). The command line calls these same
functions (flows/cli). Configuration to fix raises ConfigurationError; a run stopped early raises
RunStopped; both are VideoferryError (videoferry.errors). The service's token comes from VIDEOFERRY_TOKEN or
a credentials block (videoferry.blocks), never from an argument. docs/python-api.md has the details.
"""

from flows.apply.options import ApplyOptions
from flows.archive.options import ArchiveOptions
from flows.backup.options import BackupOptions
from flows.check.options import CheckOptions
from flows.links.options import EmbedsOptions, LinksOptions
from flows.migrate.options import MigrateOptions
from flows.setup.options import DrmCheckOptions, SetupOptions
from videoferry.errors import ConfigurationError, RunStopped, VideoferryError
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
