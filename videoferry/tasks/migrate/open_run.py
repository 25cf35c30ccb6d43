"""A run's context opened from plain values (what a Prefect task gets), cached once per process and run."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import NotRequired, TypedDict

from videoferry.connectors.client import VideoClient
from videoferry.connectors.config import Settings
from videoferry.connectors.s3 import S3Config
from videoferry.connectors.tus import TusUpload
from videoferry.state.errors import LedgerError
from videoferry.state.ledger import Ledger
from videoferry.tasks.migrate.byte_plane import DaskBytes
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.service import run_client, service_settings
from videoferry.tasks.stop import ServiceUnavailable


class RunRef(TypedDict):
    """What a worker needs to open a run's context: plain values only (JSON as it is).

    Never the token: a worker reads VIDEOFERRY_TOKEN from its own environment, like the flow, and
    VIDEOFERRY_LIMITER_URL too (a redis URL may carry a password).
    """

    ledger: str  #: the ledger file (a remote ledger's local copy)
    ledger_url: NotRequired[str]  #: the --ledger value (it says where the run's limiter store is)
    run_id: str
    api_url: str
    upload_url: str
    rate_per_second: int
    rate_per_minute: int
    timeout: float
    chunk_size: int
    poll_interval: float
    parent_id: str | None
    s3_endpoint_url: str | None
    s3_region: str | None
    dask: str | None  #: --dask: the scheduler whose workers send the bytes (None: this process)


def open_service(settings: Settings, ledger: str, chunk_size: int) -> tuple[VideoClient, TusUpload]:
    """The client (with the run's rate limiter; ledger: the --ledger value) and the tus uploader of a run."""
    client = run_client(settings, ledger)
    tus = TusUpload.from_transport(client.transport, chunk_size=chunk_size)
    return client, tus


def run_ref(ctx: MigrateContext, settings: Settings) -> RunRef:
    """The plain values from which another process opens the context of the same run."""
    return RunRef(
        ledger=str(ctx.ledger.path),
        ledger_url=ctx.ledger_url or str(ctx.ledger.path),
        run_id=ctx.run_id,
        api_url=settings.api_url,
        upload_url=settings.upload_url,
        rate_per_second=settings.rate_per_second,
        rate_per_minute=settings.rate_per_minute,
        timeout=settings.timeout,
        chunk_size=ctx.chunk_size,
        poll_interval=ctx.poll_interval,
        parent_id=ctx.default_parent_id,
        s3_endpoint_url=ctx.s3.endpoint_url if ctx.s3 is not None else None,
        s3_region=ctx.s3.region if ctx.s3 is not None else None,
        dask=ctx.bytes_plane.address if ctx.bytes_plane is not None else None,
    )


def open_context(ref: RunRef, env: Mapping[str, str] | None = None) -> MigrateContext:
    """Open the context of a running run: the ledger, a client and an uploader; the token from `env`.

    Raises LedgerError when the run is not running (finished, or never started), ConfigError when the
    environment has no token.
    """
    settings = service_settings(
        env,
        api_url=ref["api_url"],
        upload_url=ref["upload_url"],
        rate_per_second=ref["rate_per_second"],
        rate_per_minute=ref["rate_per_minute"],
        timeout=ref["timeout"],
    )
    ledger = Ledger.open(ref["ledger"], create=False)
    try:
        if not _running(ledger, ref["run_id"]):
            raise LedgerError(f"ledger {ref['ledger']}: run {ref['run_id']} is not running")
        client, tus = open_service(settings, ref.get("ledger_url") or ref["ledger"], ref["chunk_size"])
    except BaseException:
        ledger.close()
        raise
    ctx = MigrateContext(
        client=client,
        tus=tus,
        ledger=ledger,
        run_id=ref["run_id"],
        s3=S3Config(endpoint_url=ref["s3_endpoint_url"], region=ref["s3_region"]),
        chunk_size=ref["chunk_size"],
        poll_interval=ref["poll_interval"],
        default_parent_id=ref["parent_id"],
        bytes_plane=DaskBytes.connect(dask) if (dask := ref.get("dask")) else None,
    )
    client.transport.silence.on_silent = lambda message: ctx.stop(ServiceUnavailable(message))
    return ctx


def close_context(ctx: MigrateContext) -> None:
    """Close what open_context opened."""
    try:
        ctx.tus.close()
        ctx.client.close()
        ctx.platforms.close()
        if ctx.bytes_plane is not None:
            ctx.bytes_plane.close()
    finally:
        ctx.ledger.close()


def _running(ledger: Ledger, run_id: str) -> bool:
    return any(run.run_id == run_id for run in ledger.runs("running"))


# ---------------------------------------------------------------------------------- the per-process cache

#: (ledger path, run id) -> (context, opened here). A run's own process shares its context (opened here:
#: False, the run closes it); other processes open theirs on first use and close it once the run is over.
_CONTEXTS: dict[tuple[str, str], tuple[MigrateContext, bool]] = {}
_LOCK = threading.Lock()


def _key(ledger_path: str | Path, run_id: str) -> tuple[str, str]:
    return str(Path(ledger_path).expanduser().resolve()), run_id


def share(ctx: MigrateContext) -> None:
    """Let this process's tasks of the run use the run's own context (the same stop, the same counters)."""
    with _LOCK:
        _CONTEXTS[_key(ctx.ledger.path, ctx.run_id)] = (ctx, False)


def forget(ctx: MigrateContext) -> None:
    """The run is over: its tasks in this process no longer find its context."""
    with _LOCK:
        _CONTEXTS.pop(_key(ctx.ledger.path, ctx.run_id), None)


def context_for(ref: RunRef) -> MigrateContext:
    """The context of the run `ref` names in this process: shared by the run, or opened now and kept.

    Contexts this cache opened for runs that have ended since are closed first.
    """
    key = _key(ref["ledger"], ref["run_id"])
    with _LOCK:
        _close_finished()
        entry = _CONTEXTS.get(key)
        if entry is None:
            entry = (open_context(ref), True)
            _CONTEXTS[key] = entry
        return entry[0]


def close_finished() -> None:
    """Close the contexts this cache opened whose run is no longer running."""
    with _LOCK:
        _close_finished()


def _close_finished() -> None:
    for key, (ctx, opened_here) in list(_CONTEXTS.items()):
        if not opened_here:
            continue
        try:
            over = not _running(ctx.ledger, ctx.run_id)
        except LedgerError:
            over = True
        if over:
            del _CONTEXTS[key]
            close_context(ctx)


@atexit.register
def _close_all() -> None:
    with _LOCK:
        for ctx, opened_here in _CONTEXTS.values():
            if opened_here:
                close_context(ctx)
        _CONTEXTS.clear()
