"""The apply job: its options, its plain runner and its Prefect flow."""

from videoferry.flows.job import Job

APPLY = Job(
    "apply",
    runner="videoferry.flows.apply.runner:run_apply",
    outcome="videoferry.flows.apply.runner:ApplyOutcome",
    flow="videoferry.flows.apply.flow:apply_flow",
)
