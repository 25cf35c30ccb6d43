"""The check job: its options, its plain runner and its Prefect flow (its findings as artifacts)."""

from flows.job import Job

CHECK = Job(
    "check",
    runner="flows.check.runner:run_check",
    outcome="flows.check.runner:CheckOutcome",
    flow="flows.check.flow:check_flow",
)
