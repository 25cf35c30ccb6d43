"""The migrate job: its options, its plain runner and its Prefect flow."""

from videoferry.flows.job import Job

MIGRATE = Job(
    "migrate",
    runner="videoferry.flows.migrate.runner:run_migration",
    outcome="videoferry.flows.migrate.outcome:MigrateOutcome",
    flow="videoferry.flows.migrate.flow:migrate_flow",
)
