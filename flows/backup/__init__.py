"""The backup job: its options, its plain runner and its Prefect flow."""

from flows.job import Job

BACKUP = Job(
    "backup",
    runner="flows.backup.runner:run_backup",
    outcome="flows.job:CopyOutcome",
    flow="flows.backup.flow:backup_flow",
)
