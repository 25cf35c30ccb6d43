"""The steps of every job: plain functions the runners call; Prefect tasks: tasks/migrate/prefect_tasks.py."""
