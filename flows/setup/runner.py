"""The plain setup runner (no Prefect): plan, up (exactly once) and drift of a desired-state file."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from connectors.config import Settings
from connectors.desired_state import DesiredState, DesiredStateError, load_desired_state
from core.redact import blank
from flows.job import Exit, Outcome, Run, failure, read_ledger, run_job
from flows.setup.options import DEFAULT_OUTPUTS, SetupOptions
from tasks.service import run_client
from tasks.setup.compare import ChangeSet, Comparer, as_rows, change_summary, changes_text, resolve_secret
from tasks.setup.outputs import Outputs, write_outputs
from tasks.setup.up import SetupWriter

log = logging.getLogger(__name__)


@dataclass
class SetupOutcome(Outcome):
    """How a setup command ended: exit status, the lines to print (no secret in them), the plan's counts and
    rows, the output files written."""

    lines: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def log_lines(self) -> list[str]:
        """The lines to print."""
        return list(self.lines)

    def failure(self) -> str:
        """The message of a Failed flow run: the exit status and the last line (the summary, or why)."""
        return f"exit status {self.exit_code}: {self.lines[-1] if self.lines else 'differences'}"


def load_state(file: str) -> DesiredState:
    """The desired-state file, checked, secrets resolved from their references (DesiredStateError)."""
    return load_desired_state(file, resolve_secret)


def _change_lines(changeset: ChangeSet, state: DesiredState, show_unchanged: bool) -> list[str]:
    return [blank(line, state.secrets) for line in changes_text(changeset, show_unchanged=show_unchanged)]


def run_plan(opts: SetupOptions, settings: Settings, *, drift: bool = False) -> SetupOutcome:
    """What would change (GET calls only). drift: exit 1 when the service differs from the file."""
    try:
        state = load_state(opts.file)
    except DesiredStateError as exc:
        return SetupOutcome(Exit.CONFIG, lines=[f"error: {p}" for p in exc.problems])
    with read_ledger(opts.ledger) as ledger, run_client(settings, opts.ledger) as client:
        changeset = Comparer(client, ledger, prune=opts.prune).compare(state)
    lines = _change_lines(changeset, state, opts.show_unchanged)
    lines += [f"error: {p}" for p in changeset.problems]
    lines.append(f"plan: {change_summary(changeset)}")
    code = (
        Exit.CONFIG if changeset.problems else Exit.INCOMPLETE if drift and changeset.differs else Exit.DONE
    )
    if drift:
        lines.append("drift: the service differs from the file" if changeset.differs else "drift: none")
    rows = [dict(r) for r in as_rows(changeset)]
    failed = [failure(opts.file, "invalid", p) for p in changeset.problems]
    if drift:
        failed += [_drifted(r) for r in rows if r["action"] != "unchanged"]
    return SetupOutcome(code, lines=lines, counts=changeset.counts(), rows=rows, failed=failed)


def _drifted(row: dict[str, Any]) -> dict[str, str]:
    """A difference between the service and the file, as the drift artifact names it."""
    fields = ", ".join(row["fields"])
    return failure(
        f"{row['kind']} {row['object']}",
        row["action"],
        f"{row['action']}" + (f": {fields}" if fields else ""),
    )


def run_drift(opts: SetupOptions, settings: Settings) -> SetupOutcome:
    """The nightly check: exit status 1 when the service differs from the file (GET calls only)."""
    return run_plan(opts, settings, drift=True)


def run_up(opts: SetupOptions, settings: Settings) -> SetupOutcome:
    """Make the service match the file: each write once (intent before, outcome after, creates looked up)."""
    try:
        state = load_state(opts.file)
    except DesiredStateError as exc:
        return SetupOutcome(Exit.CONFIG, lines=[f"error: {p}" for p in exc.problems])

    def body(run: Run) -> SetupOutcome:
        run.summary = lambda: {"file": opts.file}
        changeset = Comparer(run.client, run.ledger, prune=opts.prune).compare(state)
        lines = _change_lines(changeset, state, opts.show_unchanged)
        if changeset.problems:
            lines += [f"error: {p}" for p in changeset.problems]
            return SetupOutcome(Exit.CONFIG, lines=lines, counts=changeset.counts())
        writer = SetupWriter(run.client, run.ledger, run.run_id, state.secrets)
        writer.reconcile_pending()
        result = writer.write_changes(changeset)
        written = write_outputs(run.client, state, result.events, Outputs(opts.outputs), result.batches)
        lines += [f"skipped: {s}" for s in result.skipped] + [f"failed: {f}" for f in result.failed]
        lines.append(f"plan: {change_summary(changeset)}")
        lines.append(
            f"up: {result.writes} write call(s), {len(result.failed)} failed, {len(result.skipped)} skipped"
        )
        if written:
            lines.append(_outputs_line(opts.outputs, len(written)))
        if result.stopped is not None:
            run.stop(result.stopped)  # recorded with the run (status and report say it)
            lines.append(f"not attempted: {result.not_attempted} change(s), left for the rerun")
            lines.append(f"stopped: {result.stopped}")
        code = Exit.INCOMPLETE if result.failed or result.skipped or result.stopped else Exit.DONE
        lines = [blank(line, state.secrets) for line in lines]
        rows = [dict(r) for r in as_rows(changeset)]
        failed = [failure(blank(f, state.secrets), "failed", blank(f, state.secrets)) for f in result.failed]
        failed += [
            failure(blank(s, state.secrets), "skipped", blank(s, state.secrets)) for s in result.skipped
        ]
        if result.stopped is not None:
            failed.append(failure(opts.file, result.stopped.code, str(result.stopped)))
        return SetupOutcome(
            code, lines=lines, counts=changeset.counts(), rows=rows, outputs=written, failed=failed
        )

    return run_job("setup up", asdict(opts), opts.ledger, settings, body)


def _outputs_line(outputs: str, files: int) -> str:
    """Where `up` wrote the links, stream keys and codes: the full path, and whether it is the default."""
    where = outputs if outputs.startswith("s3://") else str(Path(outputs).resolve())
    chosen = " (the default: --outputs DIR|s3://BUCKET/PREFIX/ chooses)" if outputs == DEFAULT_OUTPUTS else ""
    return f"outputs (play links, stream keys, codes; files mode 0600): {files} file(s) under {where}{chosen}"
