"""The check runner: compare an inventory (and its ledger) with the service; --adopt rebuilds the ledger."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from connectors.client import VideoClient
from connectors.config import Settings
from connectors.errors import AuthError
from connectors.inventory import read_inventory
from connectors.s3 import S3Config
from flows.options import DEFAULT_LEDGER
from state.ledger import Ledger
from tasks.check.adopt import Adoption, adopt_items
from tasks.check.compare import CheckLine, Mark
from tasks.check.durations import inventory_durations
from tasks.check.items import CheckSettings, check_items
from tasks.check.listing import list_destination
from tasks.check.report import summarize, write_check_report, write_combined
from tasks.service import run_limiter


class CheckConfigError(Exception):
    """Something to fix before a check can run (exit status 2): the token, mostly."""


@dataclass(frozen=True)
class CheckOptions:
    """The options of `videoferry check`."""

    inventory: str
    ledger: str = DEFAULT_LEDGER
    parent_id: str | None = None
    download_md5: bool = False
    combined: str | None = None
    report_dir: str | None = None
    adopt: bool = False


@dataclass
class CheckOutcome:
    """How a check ended: exit status, combined lines, notes (ledger, adoptions), summary, report files."""

    exit_code: int
    lines: list[CheckLine]
    notes: list[str]
    summary: dict[str, Any]
    adoptions: list[Adoption] = field(default_factory=list)
    report_files: list[str] = field(default_factory=list)


def _rejected_lines(errors: list[Any]) -> list[CheckLine]:
    return [
        CheckLine(Mark.ERROR, f"row {e.row}", e.row, None, None, (), f"rejected, field {e.field}: {e.reason}")
        for e in errors
    ]


def _open_ledger(opts: CheckOptions) -> tuple[Ledger | None, str]:
    """The ledger (created and locked for a run with --adopt; read only otherwise), and a note about it."""
    path = Path(opts.ledger).expanduser()
    if opts.adopt:
        return Ledger.open(path), f"ledger {path}: adopting into it"
    if not path.exists():
        return None, f"no ledger at {path}: items matched by exact title (and size) in their parent"
    return Ledger.open(path, create=False), f"ledger {path}: items matched by its video ids first"


def run_check(opts: CheckOptions, settings: Settings, s3: S3Config | None = None) -> CheckOutcome:
    """Run one check. Raises InventoryError, LedgerError (and LedgerBusyError), CheckConfigError (token)."""
    s3 = s3 or S3Config.from_env()
    inventory = read_inventory(opts.inventory, default_parent_id=opts.parent_id, via="auto", s3=s3)
    specs = list(inventory.specs())
    ledger, ledger_note = _open_ledger(opts)
    run_id: str | None = None
    status = "failed"
    client = VideoClient.from_settings(settings, limiter=run_limiter(settings, opts.ledger))
    try:
        if ledger is not None and opts.adopt:
            run_id = ledger.start_run("check", {k: v for k, v in asdict(opts).items()})
            ledger.plan(iter(specs), run_id)
        try:
            dest = list_destination(client, [s.parent_id for s in specs])
        except AuthError as exc:
            raise CheckConfigError(f"the service refused the token (VIDEOFERRY_TOKEN): {exc}") from None
        ledger_ids: dict[str, str] = {}
        owners: dict[str, str] = {}
        if ledger is not None:
            ledger_ids = {i.key: i.video_id for i in ledger.items() if i.video_id}
            owners = ledger.video_owners(list(dest.videos))
        cfg = CheckSettings(
            download_md5=opts.download_md5, s3=s3, durations=inventory_durations(opts.inventory, s3)
        )
        result = check_items(client, specs, dest, ledger_ids, owners, cfg)
        adoptions: list[Adoption] = []
        if ledger is not None and run_id is not None:
            adoptions = adopt_items(ledger, run_id, result.matches, result.items)
        lines = [*result.items, *result.extras, *_rejected_lines(inventory.errors)]
        summary = summarize([*result.items, *_rejected_lines(inventory.errors)], result.extras, adoptions)
        outcome = CheckOutcome(
            exit_code=0 if summary["match"] and specs else 1,
            lines=lines,
            notes=[ledger_note, *inventory.warnings, *(a.text() for a in adoptions)],
            summary=summary,
            adoptions=adoptions,
        )
        if not specs and not inventory.errors:
            outcome.notes.append(f"the inventory {opts.inventory} has no rows: nothing to check")
        if opts.combined:
            outcome.report_files.append(str(write_combined(Path(opts.combined), lines)))
        if opts.report_dir:
            files = write_check_report(Path(opts.report_dir), lines, summary, adoptions)
            outcome.report_files += [str(p) for p in files]
        status = "succeeded" if outcome.exit_code == 0 else "differences"
        return outcome
    finally:
        client.close()
        if ledger is not None:
            try:
                if run_id is not None:
                    ledger.finish_run(run_id, status, ledger.summary(run_id))
            finally:
                ledger.close()
