"""The plain setup runner (no Prefect): plan, up (exactly once) and drift of a desired-state file."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from connectors.config import Settings
from connectors.desired_state import DesiredState, DesiredStateError, load_desired_state
from core.redact import blank
from state.ledger import Ledger
from tasks.service import run_limiter
from tasks.setup.outputs import Outputs, write_outputs
from tasks.setup.plan import Plan, Planner, as_rows, changes_text, plan_summary, resolve_secret
from tasks.setup.up import SetupWriter

log = logging.getLogger(__name__)

EXIT_OK, EXIT_DIFFERS, EXIT_CONFIG = 0, 1, 2


@dataclass(frozen=True)
class SetupOptions:
    """What one setup command is asked to do (the command line's and the flows' parameters)."""

    file: str
    ledger: str = "videoferry-ledger.db"
    prune: bool = False
    outputs: str = "setup-outputs"
    show_unchanged: bool = False


@dataclass
class SetupOutcome:
    """How a setup command ended: exit code, the lines to print (no secret in them), the plan's rows."""

    exit_code: int
    lines: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly form (the flows' return value)."""
        return asdict(self)


def load_state(file: str) -> DesiredState:
    """The desired-state file, checked, secrets resolved from their references (DesiredStateError)."""
    return load_desired_state(file, resolve_secret)


def _client(settings: Settings, ledger_path: str) -> Any:
    from connectors.client import VideoClient

    return VideoClient.from_settings(settings, limiter=run_limiter(settings, ledger_path))


def _read_ledger(path: str) -> Ledger | None:
    """The ledger for reading (what setup created, posters set), or None when there is none yet."""
    return Ledger.open(path, create=False) if Path(path).expanduser().exists() else None


def _plan_lines(plan: Plan, state: DesiredState, show_unchanged: bool) -> list[str]:
    return [blank(line, state.secrets) for line in changes_text(plan, show_unchanged=show_unchanged)]


def run_plan(opts: SetupOptions, settings: Settings, *, drift: bool = False) -> SetupOutcome:
    """What would change (GET calls only). drift: exit 1 when the service differs from the file."""
    try:
        state = load_state(opts.file)
    except DesiredStateError as exc:
        return SetupOutcome(EXIT_CONFIG, [f"error: {p}" for p in exc.problems])
    ledger = _read_ledger(opts.ledger)
    client = _client(settings, opts.ledger)
    try:
        plan = Planner(client, ledger, prune=opts.prune).plan(state)
    finally:
        client.close()
        if ledger is not None:
            ledger.close()
    lines = _plan_lines(plan, state, opts.show_unchanged)
    lines += [f"error: {p}" for p in plan.problems]
    lines.append(f"plan: {plan_summary(plan)}")
    code = EXIT_CONFIG if plan.problems else EXIT_DIFFERS if drift and plan.differs else EXIT_OK
    if drift:
        lines.append("drift: the service differs from the file" if plan.differs else "drift: none")
    return SetupOutcome(code, lines, plan.counts(), [dict(r) for r in as_rows(plan)])


def run_up(opts: SetupOptions, settings: Settings) -> SetupOutcome:
    """Make the service match the file: each write once (intent before, outcome after, creates looked up)."""
    try:
        state = load_state(opts.file)
    except DesiredStateError as exc:
        return SetupOutcome(EXIT_CONFIG, [f"error: {p}" for p in exc.problems])
    ledger = Ledger.open(opts.ledger)
    try:
        run_id = ledger.start_run("setup up", asdict(opts))
    except BaseException:
        ledger.close()
        raise
    client = _client(settings, opts.ledger)
    status = "failed"
    try:
        plan = Planner(client, ledger, prune=opts.prune).plan(state)
        lines = _plan_lines(plan, state, opts.show_unchanged)
        if plan.problems:
            status = "refused"
            return SetupOutcome(EXIT_CONFIG, lines + [f"error: {p}" for p in plan.problems], plan.counts())
        writer = SetupWriter(client, ledger, run_id, state.secrets)
        writer.reconcile_pending()
        result = writer.write_plan(plan)
        written = write_outputs(client, state, result.events, Outputs(opts.outputs), result.batches)
        lines += [f"skipped: {s}" for s in result.skipped] + [f"failed: {f}" for f in result.failed]
        lines.append(f"plan: {plan_summary(plan)}")
        lines.append(
            f"up: {result.writes} write call(s), {len(result.failed)} failed, {len(result.skipped)} skipped"
        )
        if written:
            lines.append(f"outputs (mode 0600): {len(written)} file(s) under {opts.outputs}")
        code = EXIT_DIFFERS if result.failed or result.skipped else EXIT_OK
        status = "succeeded" if code == EXIT_OK else "incomplete"
        lines = [blank(line, state.secrets) for line in lines]
        return SetupOutcome(code, lines, plan.counts(), [dict(r) for r in as_rows(plan)], written)
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        try:
            ledger.finish_run(run_id, status, {"file": opts.file})
        finally:
            client.close()
            ledger.close()
