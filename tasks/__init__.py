"""The steps of every job: plain functions the runners call (Prefect tasks: only migrate/prefect_tasks.py)."""
