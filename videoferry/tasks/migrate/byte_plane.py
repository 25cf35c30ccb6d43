"""The data plane on Dask: tus byte transfers run on a cluster's workers; the coordinator keeps the rest.

A worker gets plain values only: the upload address (the permission to send; no token), the source (a
path every worker can read, an s3:// object it has credentials for, or a URL), the expected size and the
chunk size. It asks the address for its offset (HEAD) and sends the rest, so a transfer given to another
worker after one died resumes where the service is. The ledger, every API call (init, polls, updates) and
the rate budget stay with the coordinator. Requests to upload addresses are not API calls (spec 8): they
do not pass the limiter, unless the service counts them (a 429 from an upload address), which a worker
answers by waiting as the service asks.

With a remote ledger (`--ledger s3://`) a worker sends nothing once the run's lease may have ended: each
push carries the wall-clock time until which the coordinator may still send (its lease's deadline, which
renewals move on), and the worker's tus uploader refuses a PATCH unsent from then on (SendWindowClosed).
The coordinator then asks its own guard: the lease lost, the run stops; renewed meanwhile, the push is given
again with the new deadline and resumes from the server's offset (HEAD), so a long upload goes in pieces
of one lease each and no byte is sent twice. The hosts' clocks must agree to within the lease's margin
(a sixth of the lease; NTP does far better).

Dask is used through distributed's own client rather than prefect-dask's task runner: the flow's task
runs hold the run's ledger, which must not travel to workers; only this byte push does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)


class SendWindowClosed(Exception):
    """A worker refused to send a PATCH: the time the coordinator gave it (its lease's deadline) had come."""


def _no_later_than(send_until: float | None) -> Callable[[], None] | None:
    """A tus send guard refusing once the wall clock reaches send_until (None: no limit)."""
    if send_until is None:
        return None

    def guard() -> None:
        if time.time() >= send_until:
            raise SendWindowClosed("the run's lease may have ended: nothing more is sent from this worker")

    return guard


def push_bytes(
    endpoint: str,
    source_uri: str,
    size: int,
    chunk_size: int,
    s3_endpoint_url: str | None = None,
    s3_region: str | None = None,
    outage: float | None = None,
    send_until: float | None = None,
) -> int:
    """Run on a worker: send source_uri to the tus endpoint from the server's offset; the final offset. A
    service that answers nothing is waited on for `outage` seconds at most (the run's bound); no PATCH leaves
    at or after `send_until` (wall clock; SendWindowClosed)."""
    from videoferry.connectors.client.silence import Silence
    from videoferry.connectors.s3 import S3Config
    from videoferry.connectors.sources import open_source
    from videoferry.connectors.tus import TusUpload

    source = open_source(source_uri, s3=S3Config(endpoint_url=s3_endpoint_url, region=s3_region))
    if source.size != size:
        from videoferry.connectors.sources import SourceError

        raise SourceError(source_uri, f"the worker sees {source.size} bytes, the coordinator {size}")
    guard = _no_later_than(send_until)
    with TusUpload(chunk_size=chunk_size, silence=Silence(outage), send_guard=guard) as tus:
        return tus.upload(endpoint, source)


@dataclass
class DaskBytes:
    """The coordinator's handle on the cluster: push() blocks the calling batch thread until done."""

    client: Client
    address: str
    windows_closed: int = 0  #: pushes a worker ended at the end of the run's lease (then given again)

    @classmethod
    def connect(cls, address: str, timeout: float = 30.0) -> DaskBytes:
        """Connect to a running scheduler (tcp://host:port); raises OSError naming the address."""
        from distributed import Client

        try:
            client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise OSError(f"no Dask scheduler at {address}: {type(exc).__name__}") from None
        return cls(client=client, address=address)

    def push(
        self,
        endpoint: str,
        source_uri: str,
        size: int,
        chunk_size: int,
        s3: Any = None,
        outage: float | None = None,
        guard: Callable[[], None] = lambda: None,
        window: Callable[[], float | None] = lambda: None,
    ) -> int:
        """Send one item's bytes on a worker (given to another if it dies), waiting on a service that answers
        nothing for `outage` seconds at most; its final offset. `window` gives the seconds the run may still
        send (None: no limit); `guard` raises once it may no longer: the push is given again each time a
        worker stopped at the end of the window while the guard still lets the run send."""
        while True:
            guard()
            left = window()
            future = self.client.submit(
                push_bytes,
                endpoint,
                source_uri,
                size,
                chunk_size,
                getattr(s3, "endpoint_url", None),
                getattr(s3, "region", None),
                outage,
                None if left is None else time.time() + left,
                pure=False,  # a worker that dies: the scheduler gives it to another (allowed-failures, 3)
            )
            try:
                return int(future.result())
            except SendWindowClosed:
                self.windows_closed += 1
                log.info("a worker stopped sending at the end of the run's lease; given again if renewed")

    def workers(self) -> int:
        """How many workers the cluster has now."""
        return len(self.client.scheduler_info().get("workers", {}))

    def close(self) -> None:
        """Disconnect (the cluster keeps running)."""
        self.client.close()
