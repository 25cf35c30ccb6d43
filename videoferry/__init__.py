"""videoferry as a Python library: a typed function per job, its options and outcomes, blocks and errors.

    import videoferry

    outcome = videoferry.migrate("inventory.csv", parent_id="...", ledger="ledger.db")
    assert outcome.exit_code == 0, outcome.reasons

Each function takes its command's options by name (the same declarations: flows/<job>/options.py), runs the
job through its Prefect flow (a subflow when called inside a flow; a flow run of its own when a Prefect
server is configured, or prefect=True) or plainly, and returns the job's outcome (exit_code: what the command
would exit with). Configuration to fix raises ConfigurationError; a run stopped early raises RunStopped;
both are VideoferryError (videoferry.errors). The service's token comes from VIDEOFERRY_TOKEN or a
credentials block (videoferry.blocks), never from an argument. docs/python-api.md has the details.
"""

from videoferry.errors import ConfigurationError, RunStopped, VideoferryError
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.archive.options import ArchiveOptions
from videoferry.flows.backup.options import BackupOptions
from videoferry.flows.check.options import CheckOptions
from videoferry.flows.links.options import LinksOptions
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.setup.options import SetupOptions
from videoferry.jobs import apply, archive, backup, check, links, migrate, setup

__all__ = [
    "ApplyOptions",
    "ArchiveOptions",
    "BackupOptions",
    "CheckOptions",
    "ConfigurationError",
    "LinksOptions",
    "MigrateOptions",
    "RunStopped",
    "SetupOptions",
    "VideoferryError",
    "apply",
    "archive",
    "backup",
    "check",
    "links",
    "migrate",
    "setup",
]
