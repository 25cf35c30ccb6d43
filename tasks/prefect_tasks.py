"""Thin Prefect task wrappers over the batch functions (tasks receive run ids, never live objects)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.context import lookup
from tasks.transfer import transfer_batch


@task(name="transfer-batch", cache_policy=NO_CACHE, retries=0, log_prints=False)
def transfer_batch_task(run_id: str, keys: list[str]) -> dict[str, int]:
    """Transfer one batch of items (create, upload) of the run `run_id`; returns counts by end state."""
    return transfer_batch(lookup(run_id), keys)
