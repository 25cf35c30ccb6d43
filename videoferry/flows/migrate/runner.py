"""The plain migration runner (no Prefect): inventory, plan, transfers, readiness, finish, report."""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from videoferry.connectors.config import ConfigError, Settings
from videoferry.connectors.s3 import S3Config
from videoferry.connectors.tus import TusUpload
from videoferry.connectors.webhook import WebhookReceiver
from videoferry.flows.job import Run, failure, run_job, run_status, stopped_exit
from videoferry.flows.migrate.inventory import read_migration_plan
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.outcome import MigrateOutcome
from videoferry.flows.migrate.preview import preview_migration
from videoferry.state.machine import COMPLETE_STATES, CREATING, WATCHED_STATES
from videoferry.tasks.migrate.byte_plane import DaskBytes
from videoferry.tasks.migrate.claims import start_webhooks
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.gap import sweep_gap
from videoferry.tasks.migrate.open_run import forget, share
from videoferry.tasks.migrate.plan import Plan, store_plan
from videoferry.tasks.migrate.platform_source import prepare_platform_source
from videoferry.tasks.migrate.reconcile import delete_again, retry_service_errors
from videoferry.tasks.migrate.report import FAILED_STATES, failed_item_line, spec_name
from videoferry.tasks.migrate.schedule import SETTLE_BOUND_SECONDS, Submit, advance_items
from videoferry.tasks.migrate.transfer import transfer_batch
from videoferry.tasks.report_files import publish_report
from videoferry.tasks.scheduling import Handle

log = logging.getLogger(__name__)


SubmitFactory = Callable[[MigrateContext], Submit]


def _thread_submit(pool: concurrent.futures.ThreadPoolExecutor) -> SubmitFactory:
    def factory(ctx: MigrateContext) -> Submit:
        return lambda keys: pool.submit(transfer_batch, ctx, keys)

    return factory


def _awaited(factory: SubmitFactory, run: Run) -> SubmitFactory:
    """The factory's batches, each waited for once the body is over (a stopped run's batches end at their
    next step: tasks/migrate/transfer.py), before the run's ledger and client close under them."""
    handles: list[Handle] = []

    def wait_for_batches() -> None:
        while not all(handle.done() for handle in handles):
            time.sleep(0.05)

    def tracked(ctx: MigrateContext) -> Submit:
        submit = factory(ctx)

        def send(keys: list[str]) -> Handle:
            handle = submit(keys)
            handles.append(handle)
            return handle

        return send

    run.on_end(wait_for_batches)
    return tracked


def run_migration(
    opts: MigrateOptions,
    settings: Settings,
    *,
    submit_factory: SubmitFactory | None = None,
    on_start: Callable[[MigrateContext], None] | None = None,
    on_tick: Callable[[MigrateContext], None] | None = None,
    s3: S3Config | None = None,
) -> MigrateOutcome:
    """Run one migration to its end (plain function; the Prefect flow passes its own submit_factory)."""
    if opts.dry_run:
        return preview_migration(opts, s3)
    if opts.webhook_listen:  # refused before anything runs: beyond loopback without credentials (exit 2)
        WebhookReceiver.from_listen(opts.webhook_listen)
    s3 = s3 or S3Config.from_env()
    plan = read_migration_plan(opts, s3)
    params = {k: v for k, v in asdict(opts).items() if k != "dry_run"}

    def body(run: Run) -> MigrateOutcome:
        ctx = _context(run, opts, plan, s3)
        return _migrate(run, ctx, opts, plan, submit_factory, on_start, on_tick)

    return run_job("migrate", params, opts.ledger, settings, body, token_check=True)


def _context(run: Run, opts: MigrateOptions, plan: Plan, s3: S3Config) -> MigrateContext:
    """The migration's context on the run (its client, ledger and stop), shared with this process's tasks."""
    tus = TusUpload.from_transport(run.client.transport, chunk_size=opts.chunk_size)
    ctx = MigrateContext(
        client=run.client,
        tus=tus,
        ledger=run.ledger,
        run_id=run.run_id,
        s3=s3,
        chunk_size=opts.chunk_size,
        poll_interval=opts.poll_interval,
        default_parent_id=opts.parent_id,
        abort=run.stop,
        ledger_url=opts.ledger,
        gap=run.gap,
    )
    run.summary = lambda: run.ledger.summary(run.run_id)
    run.on_close(_close, ctx)
    if opts.dask:
        try:
            ctx.bytes_plane = DaskBytes.connect(opts.dask)
        except OSError as exc:
            ctx.stop(ConfigError(f"--dask: {exc}"))
    if plan.shard is not None:  # titles shared with another shard's rows count as shared here too
        ctx.shared_titles = plan.shared_titles()
    share(ctx)  # this process's tasks of the run use this very context
    return ctx


def _close(ctx: MigrateContext) -> None:
    """What the migration's context opened beyond the run's client (the tus uploader, the Dask client)."""
    forget(ctx)
    ctx.tus.close()
    ctx.platforms.close()
    if ctx.bytes_plane is not None:
        ctx.bytes_plane.close()


def _migrate(
    run: Run,
    ctx: MigrateContext,
    opts: MigrateOptions,
    plan: Plan,
    submit_factory: SubmitFactory | None,
    on_start: Callable[[MigrateContext], None] | None,
    on_tick: Callable[[MigrateContext], None] | None,
) -> MigrateOutcome:
    """The migration's own work: plan, preflight, transfers, readiness and finish (the schedule), report."""
    ledger = run.ledger
    store_plan(plan, ledger, run.run_id)
    prepare_platform_source(ctx, plan)
    if opts.retry_failed:
        ledger.requeue_failed(run.run_id)
        delete_again(ctx)  # a video a failed run had to delete and could not: deleted, the item created anew
    if ctx.gap is not None and not ctx.abort.is_set():
        sweep_gap(ctx)  # the restored ledger may be behind: every unsettled item looked up before any create
    if opts.retry_errors and not ctx.abort.is_set():
        retry_service_errors(ctx)  # deletes each failed video before its item is created again
    ctx.progress.items_total, ctx.progress.bytes_total = ledger.size()  # no journal scan
    if opts.webhook_listen and not ctx.abort.is_set():
        # Claims confirmed by listing; polls drop to one a minute once one was (tasks/migrate/claims.py).
        receiver = start_webhooks(ctx, opts.webhook_listen)
        run.on_end(receiver.stop)
    if on_start is not None:
        on_start(ctx)
    if submit_factory is None:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=opts.transfers, thread_name_prefix="xfer")
        run.on_end(pool.shutdown, wait=True, cancel_futures=True)
        submit_factory = _thread_submit(pool)
    else:  # the flow's task runs: the run (its ledger, its client) ends only once they have
        submit_factory = _awaited(submit_factory, run)
    stopped_waiting: float | None = None
    if not ctx.abort.is_set():
        settled = advance_items(
            ctx,
            submit_factory(ctx),
            transfers=opts.transfers,
            wait_timeout=opts.wait_timeout,
            on_tick=(lambda: on_tick(ctx)) if on_tick is not None else None,
        )
        if not settled and not ctx.abort.is_set():  # it gives up only on the wait bound or a stop
            stopped_waiting = opts.wait_timeout
    outcome = _outcome(ctx, plan, opts.inventory, stopped_waiting)
    if opts.report_dir:
        # Imported here: a run without a report directory does without the report's code (0.2-0.3 s).
        from videoferry.flows.ledger_report import RunReport, build_report, write_ledger_report
        from videoferry.tasks.migrate.report import run_lines

        this_run = outcome.summary["this_run"]
        ending = RunReport(
            "migrate", run.run_id, run_status(outcome.exit_code), this_run, run_lines(this_run)
        )
        report = build_report(ledger, rejected=plan.rejected_rows, run=ending)
        outcome.report_files = publish_report(
            opts.report_dir, lambda d: write_ledger_report(report, d), ctx.s3
        )
    return outcome


def _this_run(ctx: MigrateContext) -> dict[str, Any]:
    """What this run did to the items (state/activity.py), with the bytes its uploads sent and their rate."""
    scoped = ctx.ledger.summary(ctx.run_id)  # times, bytes and throughput of this run's journal only
    return {
        "run_id": ctx.run_id,
        **ctx.ledger.item_activity(ctx.run_id),
        "bytes": scoped["bytes_transferred"],
        "throughput_bytes_per_second": scoped["throughput_bytes_per_second"],
    }


def _outcome(
    ctx: MigrateContext, plan: Plan, inventory: str, stopped_waiting: float | None = None
) -> MigrateOutcome:
    summary = ctx.ledger.summary()
    summary["this_run"] = _this_run(ctx)
    rejected = plan.rejected_rows
    if rejected:
        summary["rejected_rows"] = len(rejected)
    counts: dict[str, int] = summary.get("counts", {})
    not_done = {s: n for s, n in counts.items() if n and s not in COMPLETE_STATES}
    reasons: list[str] = [f"warning: {w}" for w in plan.inventory.warnings]
    if ctx.abort.is_set():
        reasons.append(f"stopped: {ctx.abort.reason}")
    if stopped_waiting is not None:
        reasons.append(
            f"stopped waiting for processing after {stopped_waiting:g} s (--wait-timeout);"
            " rerun to keep waiting"
        )
    if not_done:
        reasons.append("not done: " + ", ".join(f"{n} {s}" for s, n in not_done.items()))
        reasons += [f"  {line}" for line in _not_done_lines(ctx, stopped_waiting)]
    left = sum(counts.get(s, 0) for s in SERVICE_FAILED)
    if left:
        ids = [i.video_id for i in ctx.ledger.items(list(SERVICE_FAILED), limit=NAMED_ITEMS) if i.video_id]
        more = f" and {left - len(ids)} more (videoferry report lists them)" if left > len(ids) else ""
        reasons.append(
            f"videos the service could not process stay in it ({left}, status error or aborted): a rerun with"
            " --retry-errors deletes each and migrates it again; to remove them, `videoferry apply FILE"
            " --allow-delete` with a row `delete,<video id>` each (columns op,target): "
            + ", ".join(ids)
            + more
        )
    if rejected:
        reasons.append(f"{len(rejected)} inventory rows rejected")
        reasons += [f"  row {r['row']}, field {r['field']}: {r['reason']}" for r in rejected[:20]]
    empty = not rejected and sum(counts.values()) == 0
    if empty:
        reasons.append(f"the inventory {inventory} has no rows: nothing was migrated")
    if plan.result is not None and plan.result.conflicts:
        reasons.append(f"{len(plan.result.conflicts)} rows changed source/parent after upload: not applied")
    code = 0 if not not_done and not rejected and not empty else 1
    if ctx.abort.is_set():
        code = stopped_exit(ctx.abort)
    outcome = MigrateOutcome(exit_code=code, reasons=reasons, summary=summary, rejected=rejected)
    outcome.failed = _failed(ctx, rejected) if not_done or rejected else []
    return outcome


#: The end states of items whose video the service failed: the video stays in the library.
SERVICE_FAILED = ("error", "aborted")

#: The most failed items an outcome names (the report has them all).
FAILED_NAMED = 200


def _failed(ctx: MigrateContext, rejected: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Each item not done (its source, error code and message) and each rejected row, for the artifact."""
    named = [
        failure(i.spec.source, i.error_code, f"row {i.spec.row}: {i.state}: {i.error_message or ''}".strip())
        for i in ctx.ledger.items(["failed", "error", "aborted"], limit=FAILED_NAMED)
    ]
    named += [
        failure(i.spec.source, "unknown_outcome", f"row {i.spec.row}: the create's outcome is still unknown")
        for i in ctx.ledger.items(["creating"], limit=FAILED_NAMED)
    ]
    named += [
        failure(f"row {r['row']}", "rejected", f"field {r['field']}: {r['reason']}")
        for r in rejected[:FAILED_NAMED]
    ]
    return named


#: How many items the end of a run names (`videoferry status --failures N` lists more).
NAMED_ITEMS = 20


def _not_done_lines(ctx: MigrateContext, stopped_waiting: float | None) -> list[str]:
    """Each item not done, by its source, with the true reason (at most NAMED_ITEMS, then how many more)."""
    items = [i for i in ctx.ledger.items() if i.state not in COMPLETE_STATES]
    lines: list[str] = []
    for item in items[:NAMED_ITEMS]:
        if item.state in FAILED_STATES:
            lines.append(failed_item_line(item))
            continue
        video = f"video {item.video_id}" if item.video_id else "no video yet"
        if item.state == CREATING:
            why = (
                "the create's outcome could not be told (the look-up of its video kept failing or could not"
                f" decide within {SETTLE_BOUND_SECONDS:g} s); a rerun looks it up again before any new create"
            )
        elif item.state in WATCHED_STATES and stopped_waiting is not None:
            why = f"still {item.state} in the service after {stopped_waiting:g} s ({video}); a rerun waits on"
        elif ctx.abort.is_set():
            why = f"left {item.state} ({video}) when the run stopped; a rerun goes on from there"
        else:
            why = f"{item.state} ({video}); a rerun goes on from there"
        lines.append(f"{spec_name(item.spec)}: {why}")
    if len(items) > NAMED_ITEMS:
        lines.append(f"... and {len(items) - NAMED_ITEMS} more (videoferry status --failures N lists them)")
    return lines


__all__ = ["MigrateOutcome", "read_migration_plan", "run_migration"]
