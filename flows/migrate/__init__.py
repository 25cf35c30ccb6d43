"""The migrate job: its options, its plain runner and its Prefect flow."""

from flows.job import Job

MIGRATE = Job(
    "migrate",
    runner="flows.migrate.runner:run_migration",
    outcome="flows.migrate.outcome:MigrateOutcome",
    flow="flows.migrate.flow:migrate_flow",
)
