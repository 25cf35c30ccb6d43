"""Thin Prefect task wrappers over the batch functions (tasks receive plain values, never live objects)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from videoferry.tasks.migrate.open_run import RunRef, context_for
from videoferry.tasks.migrate.transfer import transfer_batch


@task(name="transfer-batch", cache_policy=NO_CACHE, retries=0, log_prints=False)
def transfer_batch_task(run: RunRef, keys: list[str]) -> dict[str, int]:
    """Transfer one batch of items (create, upload) of the run `run` names; returns counts by end state.

    `run` is plain values (tasks/migrate/open_run.RunRef), enough to open the run's context in any process
    that can reach the ledger file and has VIDEOFERRY_TOKEN; the run's own process lends its context instead.
    """
    return transfer_batch(context_for(run), keys)
