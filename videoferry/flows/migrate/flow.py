"""The Prefect flow around run_migration: batches become task runs, results become artifacts."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.futures import PrefectFuture
from prefect.states import State
from prefect.task_runners import ThreadPoolTaskRunner

from videoferry.connectors.config import DEFAULT_CHUNK_SIZE, Settings
from videoferry.core.redact import safe_uri
from videoferry.flows import prefect_job
from videoferry.flows.job import read_ledger
from videoferry.flows.ledger_report import Report, build_report, markdown
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.runner import MigrateOutcome, SubmitFactory, run_migration
from videoferry.flows.options import DEFAULT_LEDGER, DEFAULT_WAIT_TIMEOUT, options_from_params, params
from videoferry.flows.prefect_job import job_flow
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.open_run import RunRef, run_ref
from videoferry.tasks.migrate.prefect_tasks import transfer_batch_task
from videoferry.tasks.scheduling import Handle
from videoferry.tasks.service import service_settings

#: Rows of the table artifact (the full table is in the report files).
ARTIFACT_ROWS = 500


class _FutureHandle:
    """Adapts a Prefect future to the schedule's Handle (done() without blocking, without an API call)."""

    def __init__(self, future: PrefectFuture[Any]) -> None:
        self.future = future

    @property
    def _pooled(self) -> concurrent.futures.Future[Any] | None:
        """The thread pool's own future behind the task run, when Prefect's future has one."""
        wrapped = getattr(self.future, "wrapped_future", None)
        return wrapped if isinstance(wrapped, concurrent.futures.Future) else None

    def done(self) -> bool:
        # A running future's .state reads the task run from the Prefect API: asked every tick for every
        # running batch, that is ~20 reads a second against the server. The thread pool's own future knows.
        pooled = self._pooled
        return pooled.done() if pooled is not None else self.future.state.is_final()

    def result(self) -> Any:
        """What the task run returned (raises what it raised)."""
        return self.future.result()

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        """fn(self) once the task run has ended, when the thread pool's own future can tell (else the
        schedule's tick notices it)."""
        pooled = self._pooled
        if pooled is not None:
            pooled.add_done_callback(lambda _ended: fn(self))


def _submitter(settings: Settings) -> SubmitFactory:
    """Batches become task runs that receive plain values only (the run's RunRef and the keys)."""

    def submit_factory(ctx: MigrateContext) -> Callable[[list[str]], Handle]:
        ref: RunRef = run_ref(ctx, settings)
        return lambda keys: _FutureHandle(transfer_batch_task.submit(ref, keys))

    return submit_factory


@flow(
    name="videoferry-migrate",
    task_runner=ThreadPoolTaskRunner(max_workers=4),  # type: ignore[arg-type]
    log_prints=False,
)
def migrate_flow(
    inventory: str,
    parent_id: str | None = None,
    parent_map: list[str] | None = None,
    folder_map: str | None = None,
    captions: str | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    ignore_case: bool = False,
    ledger: str = DEFAULT_LEDGER,
    transfers: int = 4,
    via: str = "auto",
    dry_run: bool = False,
    report_dir: str | None = None,
    webhook_listen: str | None = None,
    poll_interval: float = 5.0,
    wait_timeout: float | None = DEFAULT_WAIT_TIMEOUT,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    retry_errors: bool = False,
    dask: str | None = None,
    shard: str | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Migrate an inventory into the service; per-item truth is in the ledger, not in Prefect.

    The parameters are MigrateOptions' flow fields (flows/migrate/options.py), then ServiceOptions', in their
    order, with their defaults (tests/flows/test_prefect_yaml.py checks). api_url / upload_url: the
    service's {base_url} / {upload_url}; None reads VIDEOFERRY_API_URL / VIDEOFERRY_UPLOAD_URL. The token is
    never a parameter (the Prefect server stores parameters): it comes from VIDEOFERRY_TOKEN in the
    environment running the flow. wait_timeout 0 or None: no bound. A run that did not migrate every item
    (exit status 1 or 2) ends as a Failed flow run (flows/prefect_job.flow_tail).
    """
    values = dict(locals())  # first: locals() is the parameters
    return job_flow(lambda: _migrate(values), MigrateOutcome)


def _migrate(values: dict[str, Any]) -> MigrateOutcome:
    """The migrate flow's body: the options from its parameters, the run, its progress and artifacts."""
    opts, service = options_from_params(MigrateOptions, values)
    dry_run = opts.dry_run
    logger = get_run_logger()
    settings = None if dry_run else service_settings(api_url=service.api_url, upload_url=service.upload_url)
    progress: dict[str, Any] = {"id": None, "last": 0.0}

    def on_start(ctx: MigrateContext) -> None:
        progress["id"] = create_progress_artifact(
            0.0, key="videoferry-progress", description="Items complete (%)"
        )
        known = ctx.progress.bytes_total
        # Sizes are known up front only where the inventory gives them (S3 listings, a `size` column);
        # the others are learned as each upload starts.
        logger.info(
            "run %s: %d items%s",
            ctx.run_id,
            ctx.progress.items_total,
            f", {known} bytes known so far" if known else "",
        )

    def on_tick(ctx: MigrateContext) -> None:
        now = time.monotonic()
        if progress["id"] is None or now - progress["last"] < 5.0:
            return
        progress["last"] = now
        counts = ctx.ledger.counts()
        total = max(sum(counts.values()), 1)
        complete = counts.get("done", 0) + counts.get("finished", 0)
        update_progress_artifact(progress["id"], 100.0 * complete / total)

    outcome = run_migration(
        opts,
        settings,  # type: ignore[arg-type]
        submit_factory=_submitter(settings) if settings is not None else None,
        on_start=on_start,
        on_tick=on_tick,
    )
    if progress["id"] is not None:
        counts = outcome.summary.get("counts", {})
        total = max(sum(counts.values()), 1)
        update_progress_artifact(
            progress["id"], 100.0 * (counts.get("done", 0) + counts.get("finished", 0)) / total
        )
    if not dry_run:
        _artifacts(opts)
    return outcome


def _artifacts(opts: MigrateOptions) -> None:
    """The table and markdown artifacts, read from the ledger (no secrets: report rows omit endpoints)."""
    with read_ledger(opts.ledger) as ledger:
        if ledger is None:
            return
        report: Report = build_report(ledger, charts=False)  # the artifacts show no chart
    columns = [c for c in ("row", "source", "title", "state", "video_id", "error_code", "error_message")]
    rows = report.items.select([c for c in columns if c in report.items.columns]).head(ARTIFACT_ROWS)
    shown = [{**r, "source": safe_uri(str(r["source"]))} if "source" in r else r for r in rows.to_dicts()]
    create_table_artifact(shown, key="videoferry-items", description="Items (first 500)")
    create_markdown_artifact(markdown(report), key="videoferry-summary", description="Migration summary")


def run_flow(
    opts: MigrateOptions,
    *,
    api_url: str | None = None,
    upload_url: str | None = None,
    announce: Callable[[str], None] | None = None,
) -> MigrateOutcome:
    """Run migrate_flow in this process with `opts.transfers` worker threads, and read its outcome back.

    api_url / upload_url (e.g. the CLI's --api-url / --upload-url) become flow parameters; the token stays in
    this process's environment (VIDEOFERRY_TOKEN), which the in-process flow reads. announce: told where the
    flow run's page is before it starts (flows/prefect_job.run_flow).
    """
    runner: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=max(1, opts.transfers))
    configured = migrate_flow.with_options(task_runner=runner)  # type: ignore[arg-type]
    values = {**params(opts), "api_url": api_url, "upload_url": upload_url}
    return prefect_job.run_flow(configured, values, MigrateOutcome, announce)
