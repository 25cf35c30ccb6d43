"""The plain apply runner (no Prefect): read the operations file, resolve, plan units, run them, report."""

from __future__ import annotations

import concurrent.futures
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from connectors.config import Settings
from connectors.errors import AuthError
from connectors.operations import read_operations
from connectors.s3 import S3Config
from flows.ledger_report import build_report, write_report
from state.ledger import Ledger
from state.machine import UNIT_END_STATES, UnitState
from tasks.apply.context import ApplyContext
from tasks.apply.plan import Refusal, resolve_plan
from tasks.apply.schedule import advance_units, prepare
from tasks.apply.unit import run_unit
from tasks.apply.units import refuse_deletes, unit_plans
from tasks.service import run_limiter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApplyOptions:
    """What one apply run is asked to do (the command line's and the flow's parameters)."""

    ops: str
    ledger: str = "videoferry-ledger.db"
    transfers: int = 4
    allow_delete: bool = False
    report_dir: str | None = None
    poll_interval: float = 5.0
    wait_timeout: float = 3600.0


@dataclass
class ApplyOutcome:
    """How an apply run ended: exit code, reason lines, unit counts, report files."""

    exit_code: int
    reasons: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    report_files: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly form (the flow's return value)."""
        return asdict(self)


def run_apply(opts: ApplyOptions, settings: Settings, *, s3: S3Config | None = None) -> ApplyOutcome:
    """Apply an operations file to the library, exactly once per unit; the ledger keeps every step."""
    s3 = s3 or S3Config.from_env()
    operations = read_operations(opts.ops, s3=s3)
    ledger = Ledger.open(opts.ledger)
    try:
        run_id = ledger.start_run("apply", asdict(opts))
    except BaseException:
        ledger.close()
        raise
    from connectors.client import VideoClient

    client = VideoClient.from_settings(settings, limiter=run_limiter(settings, opts.ledger))
    status = "failed"
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=opts.transfers, thread_name_prefix="apply")
    try:
        ctx = ApplyContext(client=client, ledger=ledger, run_id=run_id, specs={}, s3=s3)
        ctx.poll_interval = opts.poll_interval
        try:
            plan = resolve_plan(operations, ledger, client)
        except AuthError as exc:
            ctx.stop(f"the service refused the token (VIDEOFERRY_TOKEN): {exc}", config_error=True)
            return _outcome(ctx, set(), [], None)
        ctx.specs = plan.specs  # the file's operations as resolve_plan ordered them (planned once)
        refused = [] if opts.allow_delete else refuse_deletes(plan)
        plans, skipped = unit_plans(plan, ctx.specs, ledger.video_owners)
        refused += [*plan.refused, *skipped]
        ledger.plan_units(plans, run_id)
        keys = {p.unit_key for p in plans}
        prepare(ctx, keys)
        settled = advance_units(
            ctx,
            lambda unit: pool.submit(run_unit, ctx, unit),
            keys,
            transfers=opts.transfers,
            wait_timeout=opts.wait_timeout,
        )
        outcome = _outcome(ctx, keys, refused, None if settled or ctx.abort.is_set() else opts.wait_timeout)
        status = "succeeded" if outcome.exit_code == 0 else "incomplete"
        if opts.report_dir:
            report = build_report(ledger, rejected=[_rejected(r) for r in refused])
            outcome.report_files = [str(p) for p in write_report(report, Path(opts.report_dir))]
        return outcome
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        try:
            ledger.finish_run(run_id, status, {"units": ledger.unit_counts()})
        finally:
            client.close()
            ledger.close()


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
        reasons.append(f"stopped: {ctx.abort_reason}")
    if stopped_waiting is not None:
        reasons.append(f"stopped waiting for processing after {stopped_waiting:g} s; rerun to keep waiting")
    not_done = [u for u in units if u.state != UnitState.DONE]
    if not_done:
        reasons.append("not done: " + ", ".join(f"{n} {s}" for s, n in counts.items() if s != UnitState.DONE))
        for u in not_done[:20]:
            why = (
                f"{u.error_code}: {u.error_message}"
                if u.state in UNIT_END_STATES
                else "its outcome is not known yet; a rerun settles it before anything is repeated"
            )
            reasons.append(f"  row {u.row} {u.kind} {u.unit_key} ({u.state}): {why}")
    lines = [r.line() for r in refused]
    errors = [r for r in refused if not r.warning]
    code = 0 if not not_done and not errors and not ctx.abort.is_set() else 1
    if ctx.config_error:
        code = 2
    return ApplyOutcome(exit_code=code, reasons=reasons, counts=counts, refused=lines)


__all__ = ["ApplyOptions", "ApplyOutcome", "run_apply"]
