"""A copying job's plain runner (archive, backup): options checked, destination opened, the run's downloader,
the job's work, its outcome counted, a stop said, the run's report published."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from connectors.config import Settings
from connectors.download import Downloader
from connectors.errors import stops_run
from connectors.s3 import S3Config
from flows.job import CopyOutcome, Exit, Run, failure, run_job, step_of, stopped_exit
from tasks.copying.run_report import write_run_report
from tasks.destination import Destination, open_destination
from tasks.report_files import publish_report

__all__ = ["CopyItem", "CopyOptions", "Copying", "Tally", "run_copying", "tally"]


class CopyOptions(Protocol):
    """What the frame reads of a copying job's options (ArchiveOptions, BackupOptions: dataclasses)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def to(self) -> str: ...
    @property
    def ledger(self) -> str: ...
    @property
    def report_dir(self) -> str | None: ...
    @property
    def part_size(self) -> int: ...

    def check(self) -> None: ...


class CopyItem(Protocol):
    """One item's result in a copying run (RecordingResult, VideoResult)."""

    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def copied(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def source(self) -> str: ...


@dataclass(frozen=True)
class Copying:
    """What the frame gives a job's work: the run, the destination (guarded by the run), the downloader."""

    run: Run
    dest: Destination
    downloader: Downloader

    def context(self) -> dict[str, Any]:
        """The fields of tasks/copying/steps.CopyContext the run fills."""
        run = self.run
        return {
            "ledger": run.ledger,
            "run_id": run.run_id,
            "client": run.client,
            "dest": self.dest,
            "downloader": self.downloader,
            "gap": run.gap,
            "stop": run.stop,
        }


@dataclass
class Tally:
    """What a job's work ends with: its outcome and how its run report is written into a folder."""

    outcome: CopyOutcome
    report: Callable[[Path], Sequence[Path]]


def tally(
    job: str,
    results: Sequence[Any],
    states: Sequence[str],
    *,
    noun: str,
    schema: Any,
    more_failed: Sequence[tuple[str, str, str]] = (),
    warnings: Sequence[str] = (),
) -> Tally:
    """A copying run's outcome from its results (CopyItem): counts by state in the job's order, one line and
    one failure() per failed item, then more_failed (source, step, message: a job's own failures); exit
    status 1 when anything failed; the run report (tasks/copying/run_report.py) over the same results."""
    items: Sequence[CopyItem] = results
    counts = {s: n for s in states if (n := sum(1 for r in items if r.state == s))}
    failed = [r for r in items if r.state == "failed"]
    reasons = [f"{r.label}: {r.reason}" for r in failed] + [
        f"{step}: {message}" for _, step, message in more_failed
    ]
    copied = sum(r.copied for r in items)
    outcome = CopyOutcome(
        exit_code=int(Exit.INCOMPLETE if reasons else Exit.DONE),
        reasons=reasons,
        counts=counts,
        bytes=copied,
        warnings=list(warnings),
        failed=[failure(r.source, step_of(r.reason), r.reason) for r in failed]
        + [failure(source, step, message) for source, step, message in more_failed],
    )

    def report(folder: Path) -> Sequence[Path]:
        return write_run_report(job, results, folder, schema=schema, counts=counts, noun=noun, copied=copied)

    return Tally(outcome, report)


def _stop_line(run: Run, outcome: CopyOutcome) -> None:
    """A run its stop ended early (a refusal of the workspace: exit status 1; of the token: 2) says why
    first; the items it did not finish are counted `stopped`."""
    cause = run.stop.cause
    if cause is None or not stops_run(cause):  # the service's silence, a lost lease: flows/job says them
        return
    if outcome.exit_code in (Exit.DONE, Exit.INCOMPLETE):
        outcome.exit_code = int(stopped_exit(run.stop))
    if not any(str(cause) in line for line in outcome.reasons):
        outcome.reasons.insert(0, f"stopped: {cause}")


def run_copying(
    job: str,
    opts: CopyOptions,
    settings: Settings,
    work: Callable[[Copying], Tally],
    *,
    s3: S3Config | None = None,
) -> CopyOutcome:
    """Run a copying job: its options checked (exit status 2 before anything is touched), the destination
    opened, then one run on the ledger (flows/job.run_job) whose body gives work the run, the destination
    (nothing written there once the run may no longer hold its ledger) and a downloader under the run's
    outage bound; work's outcome, a stop said, and its report published when --report asks (a directory, or
    s3://bucket/prefix/: an ephemeral worker's disk is gone after)."""
    opts.check()
    s3 = s3 or S3Config.from_env()
    dest = open_destination(opts.to, s3=s3, part_size=opts.part_size)

    def body(run: Run) -> CopyOutcome:
        dest.guard = run.guard  # nothing written there once the run may no longer hold its ledger
        silence = run.client.transport.silence  # a download is a call too: the same outage bound
        # Links are absolute (signed); a relative one is resolved against the API host that serves media.
        downloader = Downloader(settings.api_url, timeout=max(60.0, settings.timeout), silence=silence)
        run.on_close(downloader.close)
        outcome = CopyOutcome(exit_code=int(Exit.INCOMPLETE))
        run.summary = lambda: {"counts": outcome.counts, "bytes": outcome.bytes}
        done = work(Copying(run, dest, downloader))
        outcome = done.outcome
        _stop_line(run, outcome)
        if opts.report_dir:
            outcome.report_files = publish_report(opts.report_dir, done.report, s3)
        return outcome

    return run_job(job, asdict(opts), opts.ledger, settings, body)
