"""The setup job: its options, its plain runners and its Prefect flows (plan, up, drift)."""

from videoferry.flows.job import Job

SETUP_PLAN = Job(
    "setup plan",
    runner="videoferry.flows.setup.runner:run_plan",
    outcome="videoferry.flows.setup.runner:SetupOutcome",
    flow="videoferry.flows.setup.flow:setup_plan_flow",
)
SETUP_UP = Job(
    "setup up",
    runner="videoferry.flows.setup.runner:run_up",
    outcome="videoferry.flows.setup.runner:SetupOutcome",
    flow="videoferry.flows.setup.flow:setup_up_flow",
)
SETUP_DRIFT = Job(
    "setup drift",
    runner="videoferry.flows.setup.runner:run_drift",
    outcome="videoferry.flows.setup.runner:SetupOutcome",
    flow="videoferry.flows.setup.flow:setup_drift_flow",
)
