"""The plain apply runner (no Prefect): read the operations file, resolve, plan units, run them, report."""

from __future__ import annotations

import concurrent.futures
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from connectors.config import ConfigError, Settings
from connectors.errors import AuthError, WorkspaceRefusedError
from connectors.operations import read_operations
from connectors.retry import describe_failure
from connectors.s3 import S3Config
from flows.apply.options import ApplyOptions
from flows.job import Outcome, Run, failure, read_ledger, run_job, run_status, stopped_exit
from flows.ledger_report import RunReport, build_report, write_ledger_report
from state.applied import Unit
from state.machine import UNIT_END_STATES, OpStatus, UnitState
from tasks.apply.context import ApplyContext
from tasks.apply.plan import ApplyPlan, Refusal, resolve_plan
from tasks.apply.schedule import advance_units, prepare
from tasks.apply.unit import run_unit
from tasks.apply.units import refuse_deletes, unit_plans
from tasks.exactly_once import WORKSPACE_REFUSED
from tasks.gap import GapListingFailed
from tasks.report_files import publish_report

log = logging.getLogger(__name__)


@dataclass
class ApplyOutcome(Outcome):
    """How an apply run ended: exit status, reason lines, unit counts, refused rows, report files."""

    counts: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    #: What this run did to the file's units (state/activity.unit_activity); empty when it did not start.
    this_run: dict[str, int] = field(default_factory=dict)

    def log_lines(self) -> list[str]:
        """The refused rows, then the reasons."""
        return [*self.refused, *self.reasons]

    def totals(self) -> str:
        """The line a run ends with: the file's operations by state, refused rows, and what this run did."""
        counts = ", ".join(f"{n} {s}" for s, n in self.counts.items()) or "none"
        line = f"operations: {sum(self.counts.values())} ({counts}), {len(self.refused)} rows refused"
        return f"{line}; {run_line(self.this_run)}" if self.this_run else line


def run_line(this_run: dict[str, int]) -> str:
    """What one apply run did to its file's units: the calls it settled, or that it had nothing to do."""
    done = this_run.get("already_done", 0)
    if not this_run.get("worked"):
        return f"this run: nothing sent; {done} already done (skipped)"
    retried = this_run.get("retried", 0)
    return (
        f"this run: {this_run['worked']} acted on ({this_run.get('done', 0)} done,"
        f" {this_run.get('failed', 0)} failed{f', {retried} retried after failing' if retried else ''});"
        f" {done} already done (skipped)"
    )


def preview_apply(opts: ApplyOptions, settings: Settings, *, s3: S3Config | None = None) -> ApplyPlan:
    """--dry-run: what each row would do to which video (GET calls only; no write, no ledger run)."""
    from tasks.service import preview_client

    operations = read_operations(opts.ops, s3=s3 or S3Config.from_env())
    with read_ledger(opts.ledger) as book, preview_client(settings, opts.ledger) as client:
        return resolve_plan(operations, book, client)


def run_apply(opts: ApplyOptions, settings: Settings, *, s3: S3Config | None = None) -> ApplyOutcome:
    """Apply an operations file to the library, exactly once per unit; the ledger keeps every step."""
    s3 = s3 or S3Config.from_env()
    operations = read_operations(opts.ops, s3=s3)

    def body(run: Run) -> ApplyOutcome:
        run.summary = lambda: {"units": run.ledger.unit_counts()}
        ctx = ApplyContext(
            client=run.client,
            ledger=run.ledger,
            run_id=run.run_id,
            specs={},
            s3=s3,
            poll_interval=opts.poll_interval,
            chunk_size=opts.chunk_size,
            abort=run.stop,
            gap=run.gap,
            durable=run.durable,
        )
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=opts.transfers, thread_name_prefix="apply")
        run.on_end(pool.shutdown, wait=True, cancel_futures=True)
        try:
            plan = resolve_plan(operations, run.ledger, run.client)
        except AuthError as exc:
            ctx.stop(ConfigError(f"the service refused the token (VIDEOFERRY_TOKEN): {exc}"))
            return _outcome(ctx, set(), [], None)
        ctx.specs = plan.specs  # the file's operations as resolve_plan ordered them (planned once)
        refused = [] if opts.allow_delete else refuse_deletes(plan)
        plans, skipped = unit_plans(plan, ctx.specs, run.ledger.video_owners)
        refused += [*plan.refused, *skipped]
        run.ledger.plan_units(plans, run.run_id)
        keys = {p.unit_key for p in plans}
        prepare(ctx, keys)
        if ctx.gap is not None:  # listed once, before this run makes anything (tasks/apply/gap.py)
            try:
                ctx.gap.listing(run.client)
            except GapListingFailed as exc:
                ctx.stop(exc)
        settled = advance_units(
            ctx,
            lambda unit: pool.submit(run_unit, ctx, unit),
            keys,
            transfers=opts.transfers,
            wait_timeout=opts.wait_timeout,
        )
        outcome = _outcome(ctx, keys, refused, None if settled or ctx.abort.is_set() else opts.wait_timeout)
        if opts.report_dir:
            this_run = outcome.this_run
            ending = RunReport(
                "apply", run.run_id, run_status(outcome.exit_code), this_run, [run_line(this_run)]
            )
            report = build_report(run.ledger, rejected=[_rejected(r) for r in refused], run=ending)
            outcome.report_files = publish_report(
                opts.report_dir, lambda d: write_ledger_report(report, d), s3
            )
        return outcome

    return run_job("apply", asdict(opts), opts.ledger, settings, body, token_check=True)


def _rejected(r: Refusal) -> dict[str, Any]:
    return {"row": r.row, "field": r.field, "value": r.value, "reason": r.reason}


def _outcome(
    ctx: ApplyContext, keys: set[str], refused: list[Refusal], stopped_waiting: float | None
) -> ApplyOutcome:
    units = [u for u in ctx.ledger.units() if u.unit_key in keys]
    counts: dict[str, int] = {}
    for u in units:
        counts[u.state] = counts.get(u.state, 0) + 1
    reasons: list[str] = []
    if ctx.abort.is_set():
        reasons.append(f"stopped: {ctx.abort.reason}")
    waiting = [u for u in units if u.state == UnitState.PROCESSING]
    if stopped_waiting is not None and waiting:  # the wait bound ended the run, not a unit that cannot run
        reasons.append(f"stopped waiting for processing after {stopped_waiting:g} s; rerun to keep waiting")
    not_done = [u for u in units if u.state != UnitState.DONE]
    if not_done:
        reasons.append("not done: " + ", ".join(f"{n} {s}" for s, n in counts.items() if s != UnitState.DONE))
        by_key = {u.unit_key: u for u in units}
        for u in not_done[:20]:
            why = _why_not_done(ctx, u, by_key, stopped_waiting if waiting else None)
            reasons.append(f"  row {u.row} {u.kind} {u.unit_key} ({u.state}): {why}")
    lines = [r.line() for r in refused]
    errors = [r for r in refused if not r.warning]
    code = 0 if not not_done and not errors else 1
    if ctx.abort.is_set():
        code = stopped_exit(ctx.abort)
    failed = [
        failure(f"row {u.row}: {u.kind} {u.target}", u.error_code or u.state, u.error_message or u.state)
        for u in not_done
    ]
    failed += [failure(f"row {r.row}", "refused", f"field {r.field}: {r.reason}") for r in errors]
    this_run = ctx.ledger.unit_activity(ctx.run_id, keys)
    return ApplyOutcome(
        exit_code=code, reasons=reasons, counts=counts, refused=lines, failed=failed, this_run=this_run
    )


def _refused(ctx: ApplyContext, u: Unit) -> bool:
    """Whether the unit's last call is the one the workspace refused (its intent void: nothing was made)."""
    ops = ctx.ledger.ops(op_key=u.unit_key)
    last = ops[-1] if ops else None
    return (
        last is not None
        and last.status == OpStatus.VOID
        and (last.error_message or "").startswith(WORKSPACE_REFUSED)
    )


def _why_not_done(ctx: ApplyContext, u: Unit, units: dict[str, Unit], stopped_waiting: float | None) -> str:
    """The true reason a unit is not done, and what a rerun does about it."""
    if u.state in UNIT_END_STATES:
        return f"{u.error_code}: {u.error_message}"
    if u.state == UnitState.PROCESSING:
        after = f" when the run stopped waiting after {stopped_waiting:g} s" if stopped_waiting else ""
        return f"its call is done; the video was still processing{after}; a rerun waits on"
    cause = ctx.abort.cause
    if u.state == UnitState.PLANNED and isinstance(cause, WorkspaceRefusedError) and _refused(ctx, u):
        return f"not made: the workspace refused its call ({cause.code}); a rerun makes it once that is fixed"
    if u.state == UnitState.RUNNING:
        if isinstance(cause, AuthError):
            return (
                f"the service refused the token (VIDEOFERRY_TOKEN) for its call ({describe_failure(cause)}):"
                " nothing was changed; a rerun with a token it accepts makes the call"
            )
        return "its call's outcome is not known yet; a rerun settles it before anything is repeated"
    for dep in u.depends:  # planned
        other = units.get(dep)
        if other is not None and other.state == UnitState.FAILED:
            return f"not run: it waits for row {other.row} ({other.kind}), which failed"
        if other is not None and other.state != UnitState.DONE:
            return f"not run: it waits for row {other.row} ({other.kind}), which is {other.state}"
    if ctx.abort.is_set():
        return "not run: the run stopped first; a rerun runs it"
    return "not run yet; a rerun runs it"


__all__ = ["ApplyOutcome", "preview_apply", "run_apply"]
