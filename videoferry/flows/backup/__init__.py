"""The backup job: its options, its plain runner and its Prefect flow."""

from videoferry.flows.job import Job

BACKUP = Job(
    "backup",
    runner="videoferry.flows.backup.runner:run_backup",
    outcome="videoferry.flows.job:CopyOutcome",
    flow="videoferry.flows.backup.flow:backup_flow",
)
