"""The apply job: its options, its plain runner and its Prefect flow."""

from flows.job import Job

APPLY = Job(
    "apply",
    runner="flows.apply.runner:run_apply",
    outcome="flows.apply.runner:ApplyOutcome",
    flow="flows.apply.flow:apply_flow",
)
