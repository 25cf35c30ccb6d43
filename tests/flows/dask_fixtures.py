"""A real local Dask cluster for the data-plane tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture()
def cluster() -> Iterator[Any]:
    """A LocalCluster of two worker processes (with nannies) on 127.0.0.1, no dashboard."""
    from distributed import LocalCluster

    local = LocalCluster(
        n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None
    )
    try:
        yield local
    finally:
        local.close()
