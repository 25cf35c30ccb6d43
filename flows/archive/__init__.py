"""The archive job: its options, its plain runner and its Prefect flow."""

from flows.job import Job

ARCHIVE = Job(
    "archive",
    runner="flows.archive.runner:run_archive",
    outcome="flows.job:CopyOutcome",
    flow="flows.archive.flow:archive_flow",
)
