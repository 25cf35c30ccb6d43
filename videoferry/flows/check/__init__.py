"""The check job: its options and its runner (no flow: it only reads, like rclone check)."""

from videoferry.flows.job import Job

CHECK = Job(
    "check",
    runner="videoferry.flows.check.runner:run_check",
    outcome="videoferry.flows.check.runner:CheckOutcome",
)
