"""The check runner: compare an inventory (and its ledger) with the service; --adopt rebuilds the ledger."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self

from connectors.client import VideoClient
from connectors.config import Settings
from connectors.errors import AuthError, VideoApiError
from connectors.inventory import Inventory, read_inventory
from connectors.ledger_remote import is_remote_ledger
from connectors.s3 import S3Config
from core.item import ItemSpec
from flows.check.options import CheckOptions
from flows.job import Outcome, Run, ServiceUnavailable, failure, ledger_path, read_ledger, run_job
from state.ledger import Ledger
from tasks.check.adopt import Adoption, AdoptPolicy, adopt_items, closing
from tasks.check.compare import CheckLine, Mark
from tasks.check.durations import inventory_durations
from tasks.check.explain import Applied, applied_edits
from tasks.check.items import CheckSettings, check_items
from tasks.check.listing import list_destination
from tasks.check.playable import PLAYABLE, playable_lines
from tasks.check.report import summarize, summary_lines, write_check_report, write_combined
from tasks.report_files import publish_report
from tasks.service import run_client


@dataclass
class CheckOutcome(Outcome):
    """How a check ended: exit status, the check's lines (=, -, +, *, !), notes (ledger, adoptions), the
    summary, adoptions and report files."""

    lines: list[CheckLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    adoptions: list[Adoption] = field(default_factory=list)

    def log_lines(self) -> list[str]:
        """What a flow run logs: why it stopped (a configuration error), the notes, then the summary (the
        lines themselves are in the artifacts and the report)."""
        return [*self.reasons, *self.notes, *(summary_lines(self.summary) if self.summary else [])]

    def failure(self) -> str:
        """The message of a Failed flow run: how many videos do not play when some do not, else the
        summary's first line; a run that stopped (no summary) says why."""
        if not self.summary:
            return super().failure()
        said = summary_lines(self.summary)
        playable = [line for line in said if line.startswith("playable")]
        first = playable[0] if self.summary.get("not_playable") and playable else said[0]
        return f"exit status {self.exit_code}: {first}"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly form (the flow's result): marks as their characters, tuples as lists."""
        data = asdict(self)
        rows = zip(data["lines"], self.lines, strict=True)
        data["lines"] = [{**row, "mark": line.mark.value} for row, line in rows]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The outcome a flow returned (as_dict's form): its lines and adoptions made again."""
        outcome = super().from_dict(data)
        outcome.lines = [_line(row) for row in outcome.lines]  # type: ignore[arg-type]
        outcome.adoptions = [
            a if isinstance(a, Adoption) else Adoption(**{**a, "writes": tuple(a.get("writes", ()))})
            for a in outcome.adoptions  # type: ignore[arg-type]
        ]
        return outcome


def _line(row: CheckLine | Mapping[str, Any]) -> CheckLine:
    if isinstance(row, CheckLine):
        return row
    return CheckLine(**{**row, "mark": Mark(row["mark"]), "fields": tuple(row.get("fields", ()))})


def findings(lines: list[CheckLine]) -> list[dict[str, str]]:
    """Every line that is not `=` or `~`, as the outcome artifact lists what failed: the key (or video),
    the field named first (`playable` when the video does not play) or the mark, and the line's note."""
    out: list[dict[str, str]] = []
    for line in lines:
        if line.mark in (Mark.SAME, Mark.EXPLAINED):
            continue
        source = line.key if line.key is not None else f"video {line.video_id}"
        code = PLAYABLE if PLAYABLE in line.fields else ", ".join(line.fields) or line.mark.name.lower()
        out.append(failure(source, code, line.note or line.text()))
    return out


def _rejected_lines(errors: list[Any]) -> list[CheckLine]:
    return [
        CheckLine(Mark.ERROR, f"row {e.row}", e.row, None, None, (), f"rejected, field {e.field}: {e.reason}")
        for e in errors
    ]


def run_check(opts: CheckOptions, settings: Settings, s3: S3Config | None = None) -> CheckOutcome:
    """Run one check: a run of its own with --adopt (the ledger written through its own steps), else a read.

    Raises InventoryError, LedgerError (and LedgerBusyError), AuthError, ServiceUnavailable (the listing).
    """
    s3 = s3 or S3Config.from_env()
    inventory = read_inventory(
        opts.inventory,
        default_parent_id=opts.parent_id,
        via="auto",
        s3=s3,
        parent_map=opts.parent_map or (),
    )
    path = opts.ledger if is_remote_ledger(opts.ledger) else ledger_path(opts.ledger)
    if opts.adopt:

        def body(run: Run) -> CheckOutcome:
            run.summary = lambda: run.ledger.summary(run.run_id)
            note = f"ledger {path}: adopting into it"
            return _check(opts, inventory, s3, run.client, run.ledger, run.run_id, note)

        return run_job("check", asdict(opts), opts.ledger, settings, body)
    notes: list[str] = []
    with read_ledger(opts.ledger, notes) as ledger, run_client(settings, opts.ledger) as client:
        if ledger is None:
            note = f"no ledger at {path}: items matched by title (and size) in their parent"
        else:
            note = f"ledger {path}: items matched by its video ids first"
        outcome = _check(opts, inventory, s3, client, ledger, None, note)
    outcome.notes[1:1] = notes
    return outcome


def _durations(uri: str, inventory: Inventory, specs: list[ItemSpec], s3: S3Config) -> dict[int, float]:
    """{row: seconds} of the sources: the inventory's `duration` column, or, for a platform source checked
    as it is (`check mux:`), the durations its listing says (Inventory.origins)."""
    if not inventory.origins:
        return inventory_durations(uri, s3)
    found: dict[int, float] = {}
    for spec in specs:
        origin = inventory.origins.get(spec.key)
        if origin is not None and origin.duration is not None and spec.row is not None:
            found[spec.row] = origin.duration
    return found


def _check(
    opts: CheckOptions,
    inventory: Inventory,
    s3: S3Config,
    client: VideoClient,
    ledger: Ledger | None,
    run_id: str | None,
    ledger_note: str,
) -> CheckOutcome:
    """The check itself: list the destination, match and compare every item, adopt (in a run), report."""
    specs = list(inventory.specs())
    if ledger is not None and run_id is not None:
        ledger.plan(iter(specs), run_id)
    try:
        dest = list_destination(client, [s.parent_id for s in specs])
    except AuthError:
        raise
    except VideoApiError as exc:  # the listing failed after its retries: nothing could be checked
        raise ServiceUnavailable(f"the destination could not be listed: {exc}") from exc
    ledger_ids: dict[str, str] = {}
    owners: dict[str, str] = {}
    states: dict[str, str] = {}
    if ledger is not None:
        known = ledger.items()
        ledger_ids = {i.key: i.video_id for i in known if i.video_id}
        states = {i.key: i.state for i in known}
        owners = ledger.video_owners(list(dest.videos))
    adopting = ledger is not None and run_id is not None
    cfg = CheckSettings(
        download_md5=opts.download_md5,
        s3=s3,
        durations=_durations(opts.inventory, inventory, specs, s3),
        oldest=adopting and not opts.reupload_unproven,
        # --adopt decides on the differences themselves (tasks/check/adopt.py): nothing explained away
        applied=applied_edits(ledger) if ledger is not None and not adopting else Applied(),
        one_way=opts.one_way,
    )
    result = check_items(client, specs, dest, ledger_ids, owners, cfg)
    if opts.playable:
        result.items = playable_lines(
            client, result.items, result.matches, states, cfg.durations, s3, cfg.applied, inventory.origins
        )
    adoptions: list[Adoption] = []
    if ledger is not None and run_id is not None:
        policy = AdoptPolicy(opts.reupload_unproven, opts.rewrite_differing)
        adoptions = adopt_items(ledger, run_id, result.matches, result.items, dest, policy)
    lines = [*result.items, *result.extras, *_rejected_lines(inventory.errors)]
    summary = summarize(
        [*result.items, *_rejected_lines(inventory.errors)],
        result.extras,
        adoptions,
        one_way=opts.one_way,
        outside=result.outside,
    )
    if opts.playable:
        summary["not_playable"] = sum(PLAYABLE in line.fields for line in result.items)
    outcome = CheckOutcome(
        exit_code=0 if summary["match"] and specs else 1,
        lines=lines,
        notes=[ledger_note, *inventory.warnings, *(a.text() for a in adoptions)]
        + ([closing(adoptions)] if adopting else []),
        summary=summary,
        adoptions=adoptions,
        failed=findings(lines),
    )
    if not specs and not inventory.errors:
        outcome.notes.append(f"the inventory {opts.inventory} has no rows: nothing to check")
    if opts.combined:
        outcome.report_files.append(str(write_combined(Path(opts.combined), lines)))
    if opts.report_dir:
        write = lambda d: write_check_report(d, lines, summary, adoptions)  # noqa: E731
        outcome.report_files += publish_report(opts.report_dir, write, s3)
    return outcome
