"""The setup job: its options, its plain runners and its Prefect flows (plan, up, drift)."""

from flows.job import Job

SETUP_PLAN = Job(
    "setup plan",
    runner="flows.setup.runner:run_plan",
    outcome="flows.setup.runner:SetupOutcome",
    flow="flows.setup.flow:setup_plan_flow",
)
SETUP_UP = Job(
    "setup up",
    runner="flows.setup.runner:run_up",
    outcome="flows.setup.runner:SetupOutcome",
    flow="flows.setup.flow:setup_up_flow",
)
SETUP_DRIFT = Job(
    "setup drift",
    runner="flows.setup.runner:run_drift",
    outcome="flows.setup.runner:SetupOutcome",
    flow="flows.setup.flow:setup_drift_flow",
)
