"""The check job: its options and its runner (no flow: it only reads, like rclone check)."""

from flows.job import Job

CHECK = Job("check", runner="flows.check.runner:run_check", outcome="flows.check.runner:CheckOutcome")
