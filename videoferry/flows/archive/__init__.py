"""The archive job: its options, its plain runner and its Prefect flow."""

from videoferry.flows.job import Job

ARCHIVE = Job(
    "archive",
    runner="videoferry.flows.archive.runner:run_archive",
    outcome="videoferry.flows.job:CopyOutcome",
    flow="videoferry.flows.archive.flow:archive_flow",
)
