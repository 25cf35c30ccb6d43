"""The check job: its options, its plain runner and its Prefect flow (its findings as artifacts)."""

from videoferry.flows.job import Job

CHECK = Job(
    "check",
    runner="videoferry.flows.check.runner:run_check",
    outcome="videoferry.flows.check.runner:CheckOutcome",
    flow="videoferry.flows.check.flow:check_flow",
)
