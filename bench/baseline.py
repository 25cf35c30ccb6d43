"""A fair baseline: the careful script (bench/careful.py) and ours on 300 clips, clean and under faults."""

from __future__ import annotations

import contextlib
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench import careful
from bench.end_to_end import migrate_command
from bench.fault_time import breakdown as where_time_went
from bench.figures import Figure, with_rounds
from bench.ratelog import api_calls, breakdown, refusal_windows, refused
from bench.services import REPO, EmulatorProcess
from bench.workload import BenchConfig, clip_bytes, write_clips, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace


@dataclass(frozen=True)
class Sizes:
    """Items per run, the emulator's processing seconds per video, the careful script's waits."""

    items: int
    processing: float
    timing: careful.Timing


FULL = Sizes(items=300, processing=2.0, timing=careful.Timing())
QUICK = Sizes(items=6, processing=0.5, timing=careful.Timing(poll=0.5, pause_429=0.5, retry_pause=0.2))
#: The chaos seed whose fault script both faulted runs get (seed 1: the first one every `make test` runs).
SEED = 1
T = TypeVar("T")
PER_SECOND, PER_MINUTE = 10, 300
TRANSFERS = 4
#: Faulted rounds: the careful script and videoferry each run this often under the same faults, all at once,
#: each in its own workspace, so that the ratios of the faulted runs have a spread (with one run each, the
#: careful script / videoferry read 1.85 in one run and 2.50 in the next: the fault draws differ by run).
FAULTED_ROUNDS = 2
#: How long to wait after a run for videos still processing before counting them (a given-up poll).
SETTLE_SECONDS = 30.0


@dataclass
class Run:
    """One run in its own workspace: its wall time, the request log, the videos left in the service."""

    seconds: float
    entries: list[dict[str, Any]]
    videos: list[dict[str, Any]]
    titles: list[str]
    detail: str
    #: The wall-clock time (epoch seconds) the run started, for the request log's times.
    started: float = 0.0

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The API calls the service admitted (429s are not among them)."""
        return api_calls(self.entries)

    @property
    def refused(self) -> int:
        """The 429 answers (forced by a fault or by a full window)."""
        return refused(self.entries)

    @property
    def duplicates(self) -> int:
        """Videos in the workspace beyond one per title."""
        return len(self.videos) - len({v["title"] for v in self.videos})

    def lost(self) -> list[str]:
        """Titles (files) without a done video in the service."""
        done = {v["title"] for v in self.videos if v["status"] == "done"}
        return [t for t in self.titles if t not in done]

    def extra_statuses(self) -> str:
        """`12 done, 3 error`: the statuses of the videos beyond the first done one per title."""
        seen: set[str] = set()
        extra: Counter[str] = Counter()
        for video in sorted(self.videos, key=lambda v: v["status"] != "done"):
            if video["title"] in seen:
                extra[video["status"]] += 1
            seen.add(video["title"])
        return ", ".join(f"{n} {s}" for s, n in extra.most_common()) or "none"


def _settled(ctl: EmulatorControl, ws: Workspace) -> list[dict[str, Any]]:
    """The workspace's videos once none is still processing (or after SETTLE_SECONDS)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        videos = ctl.videos(ws)
        if all(v["status"] in careful.TERMINAL for v in videos) or time.monotonic() > deadline:
            return videos
        time.sleep(0.5)


def _faults(ctl: EmulatorControl, ws: Workspace, faulted: bool) -> contextlib.AbstractContextManager[Any]:
    """Seed SEED's fault script of the chaos suite (steady faults, 5xx bursts), or nothing."""
    if not faulted:
        return contextlib.nullcontext()
    # Imported as it is, so the draws are the chaos suite's own; tests/ is in the checkout, not the package.
    if str(REPO) not in sys.path:
        sys.path.append(str(REPO))
    from tests.chaos.harness import FaultScript

    return FaultScript(ctl, ws, SEED)


def careful_run(
    base_url: str, ws: Workspace, clips: list[Path], timing: careful.Timing, faulted: bool
) -> Run:
    """The careful script on the clips in its own workspace (under the seed's faults when `faulted`)."""
    with EmulatorControl(base_url, timeout=120.0) as ctl:
        with _faults(ctl, ws, faulted):
            began = time.time()
            started = time.perf_counter()
            workers = careful.workers_for(PER_SECOND, PER_MINUTE, timing.poll)
            outcomes = careful.migrate(
                clips, ws.base_url, ws.upload_url, ws.token, ws.project_id, timing, workers=workers
            )
            seconds = time.perf_counter() - started
        videos = _settled(ctl, ws)
        entries = ctl.requests(ws.workspace_id)
    statuses = Counter(o.status for o in outcomes)
    reasons = Counter(o.error.split(",")[-1].strip() for o in outcomes if o.error)
    detail = f"the script reported {', '.join(f'{n} {s}' for s, n in statuses.most_common())}"
    if reasons:
        detail += f" (gave up: {', '.join(f'{n} x {r}' for r, n in reasons.most_common())})"
    detail += (
        f"; it sent {sum(o.posts for o in outcomes)} POSTs, {sum(o.gets for o in outcomes)} GETs, "
        f"{sum(o.retries for o in outcomes)} retries, {sum(o.lookups for o in outcomes)} lookups (they "
        f"found {sum(o.found for o in outcomes)} videos a lost answer had made)"
    )
    return Run(seconds, entries, videos, [c.stem for c in clips], detail, began)


def _videoferry(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run `videoferry migrate` once: (seconds, `exit status N; error codes: ...`); exit 1 is a result."""
    started = time.perf_counter()
    proc = subprocess.run(
        command, env=env, cwd=REPO, capture_output=True, text=True, timeout=900, check=False
    )
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"videoferry migrate exited {proc.returncode}: {' | '.join(tail)}")
    codes = [line.strip() for line in proc.stdout.splitlines() if line.startswith("error codes:")]
    return seconds, "; ".join([f"exit status {proc.returncode}", *codes[-1:]])


def videoferry_run(
    base_url: str, ws: Workspace, inventory: Path, clips: list[Path], workdir: Path
) -> tuple[Run, Run]:
    """`videoferry migrate --no-prefect` (a new process, default options, as bench/end_to_end.py runs it)
    under the seed's faults, then once more with the faults off (the rerun a failed run asks for).
    """
    command, env = migrate_command(ws, inventory, workdir / "videoferry.db", workdir, prefect=False)
    titles = [c.stem for c in clips]
    with EmulatorControl(base_url, timeout=120.0) as ctl:
        faulted = _migrated(ctl, ws, command, env, titles, faulted=True)
        rerun = _migrated(ctl, ws, command, env, titles, rerun=True)
    return faulted, rerun


def videoferry_clean_run(
    base_url: str, ws: Workspace, inventory: Path, clips: list[Path], workdir: Path
) -> Run:
    """The same `videoferry migrate --no-prefect` without faults: the run the faulted ones are held to."""
    command, env = migrate_command(ws, inventory, workdir / "videoferry.db", workdir, prefect=False)
    with EmulatorControl(base_url, timeout=120.0) as ctl:
        return _migrated(ctl, ws, command, env, [c.stem for c in clips])


def _migrated(
    ctl: EmulatorControl,
    ws: Workspace,
    command: list[str],
    env: dict[str, str],
    titles: list[str],
    *,
    faulted: bool = False,
    rerun: bool = False,
) -> Run:
    """One `videoferry migrate` process in ws, under the seed's faults when faulted: a first run's request log
    is the workspace's whole log (its start kept for the log's times), a rerun's only its own requests."""
    with _faults(ctl, ws, faulted):
        began = time.time()
        seconds, detail = _videoferry(command, env)
    if rerun:
        return Run(seconds, ctl.requests(ws.workspace_id, since=began), _settled(ctl, ws), titles, detail)
    return Run(seconds, ctl.requests(ws.workspace_id), _settled(ctl, ws), titles, detail, began)


def _cpu_seconds() -> float:
    """User + system CPU of this process and its waited-for children (the emulator, videoferry)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _figures(prefix: str, run: Run, how: str) -> Iterator[Figure]:
    """A clean run's figures: seconds, API calls, 429s, duplicates."""
    yield Figure(f"{prefix}_seconds", run.seconds, "s", f"{how}; {run.detail}")
    yield Figure(
        f"{prefix}_api_calls", len(run.calls), note=f"admitted by the service: {breakdown(run.calls)}"
    )
    yield Figure(
        f"{prefix}_429s",
        run.refused,
        note=f"429 answers: {refusal_windows(run.entries, PER_SECOND, PER_MINUTE)}",
    )
    yield Figure(
        f"{prefix}_duplicates",
        run.duplicates,
        note=f"{len(run.videos)} videos in the workspace for {len(run.titles)} files; "
        f"beyond one per title: {run.extra_statuses()}",
    )


def _each(items: Sequence[T], say: Callable[[T], str]) -> str:
    """`round 1: ...; round 2: ...` (or the one run's words)."""
    if len(items) == 1:
        return say(items[0])
    return "; ".join(f"round {i}: {say(item)}" for i, item in enumerate(items, 1))


def _faulted_figures(prefix: str, runs: list[Run], how: str) -> Iterator[Figure]:
    """The faulted rounds' figures: seconds, calls, 429s and idle time as medians with their rounds; the
    duplicates and the files lost summed over the rounds (one of either is one too many)."""
    yield with_rounds(
        f"{prefix}_seconds", [r.seconds for r in runs], "s", f"{how}; {_each(runs, lambda r: r.detail)}"
    )
    yield with_rounds(
        f"{prefix}_api_calls",
        [len(r.calls) for r in runs],
        note=f"admitted by the service: {_each(runs, lambda r: breakdown(r.calls))}",
    )
    yield with_rounds(
        f"{prefix}_429s",
        [r.refused for r in runs],
        note=f"429 answers: {_each(runs, lambda r: refusal_windows(r.entries, PER_SECOND, PER_MINUTE))}",
    )
    yield Figure(
        f"{prefix}_duplicates",
        sum(r.duplicates for r in runs),
        note="videos beyond one per title, all rounds: "
        + _each(
            runs,
            lambda r: (
                f"{len(r.videos)} videos for {len(r.titles)} files, beyond one per title {r.extra_statuses()}"
            ),
        ),
    )

    def lost(run: Run) -> str:
        missing = run.lost()
        return f"{len(missing)}" + (f" ({', '.join(missing[:3])})" if missing else "")

    yield Figure(
        f"{prefix}_lost",
        sum(len(r.lost()) for r in runs),
        note=f"files without a done video in the service, all rounds: {_each(runs, lost)}",
    )
    idle = [
        where_time_went(
            r.entries,
            r.started,
            r.seconds,
            (PER_SECOND, PER_MINUTE),
            pauses_everyone=prefix.startswith("videoferry"),  # the careful script's threads wait each alone
        )
        for r in runs
    ]
    yield with_rounds(
        f"{prefix}_idle_seconds",
        [i for i, _ in idle],
        "s",
        f"where the time went: {_each(idle, lambda i: i[1])}",
    )


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """All at once, each in its own workspace of one emulator (limits are per token): the careful script
    clean and FAULTED_ROUNDS times under chaos seed SEED's faults, `videoferry migrate` FAULTED_ROUNDS times
    under the same (each then rerun without them) and once clean.
    """
    size = QUICK if cfg.quick else FULL
    n, timing = size.items, size.timing
    wall = time.perf_counter()
    root = cfg.subdir("baseline")
    clips = write_clips(root / "clips", n, clip_bytes())
    inventory = write_inventory(root / "inventory.csv", [str(p) for p in clips])
    rounds = range(FAULTED_ROUNDS)
    at_once = 2 + 2 * FAULTED_ROUNDS
    with EmulatorProcess(root) as emu, ThreadPoolExecutor(at_once, thread_name_prefix="baseline") as pool:
        ctl = emu.ctl()
        spaces = [
            ctl.create_workspace(
                rate_per_second=PER_SECOND,
                rate_per_minute=PER_MINUTE,
                processing="timed",
                processing_seconds=size.processing,
            )
            for _ in range(at_once)
        ]
        url = emu.base_url
        ours: list[Future[tuple[Run, Run]]] = [
            pool.submit(videoferry_run, url, spaces[i], inventory, clips, _folder(root, f"faulted-{i + 1}"))
            for i in rounds
        ]
        ours_clean = pool.submit(
            videoferry_clean_run, url, spaces[FAULTED_ROUNDS], inventory, clips, _folder(root, "clean")
        )
        clean = pool.submit(careful_run, url, spaces[FAULTED_ROUNDS + 1], clips, timing, False)
        faulted = [
            pool.submit(careful_run, url, spaces[FAULTED_ROUNDS + 2 + i], clips, timing, True) for i in rounds
        ]
        ours_done = [f.result() for f in ours]
        ours_faulted = [f for f, _ in ours_done]
        reruns = [r for _, r in ours_done]
        ours_plain = ours_clean.result()
        careful_clean = clean.result()
        careful_faulted = [f.result() for f in faulted]
    cpu = _cpu_seconds()
    wall = time.perf_counter() - wall
    common = (
        f"limits {PER_SECOND}/s {PER_MINUTE}/min, processing {size.processing:g} s, {n} clips; "
        f"{at_once} runs at once in their own workspaces ({FAULTED_ROUNDS} faulted rounds of each)"
    )
    script = (
        f"bench/careful.py: {careful.workers_for(PER_SECOND, PER_MINUTE, timing.poll)} threads (as many as "
        f"the limits keep busy), one POST /v2/video per file, GET every {timing.poll:g} s until it ends, "
        f"429 -> wait {timing.pause_429:g} s doubling, 5xx/network/timeout -> back off from "
        f"{timing.retry_pause:g} s doubling, {careful.ATTEMPTS} attempts; a POST without an answer is looked "
        "up by project and title before it is sent again"
    )
    faults = f"chaos seed {SEED}'s faults (tests/chaos/harness.py FaultScript: steady faults, 5xx bursts)"
    yield from _figures(f"careful_{n}", careful_clean, f"{script}; no faults; {common}")
    yield from _faulted_figures(f"careful_{n}_faults", careful_faulted, f"{script}; {faults}; {common}")
    how = f"`videoferry migrate --no-prefect`, {TRANSFERS} transfers, defaults"
    yield from _figures(f"videoferry_{n}", ours_plain, f"{how}; no faults; {common}")
    yield from _faulted_figures(f"videoferry_{n}_faults", ours_faulted, f"{how}; {faults}; {common}")

    def rerun_words(rerun: Run) -> str:
        return (
            f"{rerun.seconds:.1f} s, {rerun.detail}, {len(rerun.calls)} API calls "
            f"({breakdown(rerun.calls)}); then {len(rerun.videos)} videos, {rerun.duplicates} duplicates"
        )

    yield Figure(
        f"videoferry_{n}_rerun_lost",
        sum(len(r.lost()) for r in reruns),
        note="after one more `videoferry migrate` of the same inventory and ledger with the faults off (the "
        f"rerun a failed run asks for), all rounds: {_each(reruns, rerun_words)}",
    )
    yield with_rounds(
        "careful_vs_videoferry_faults",
        [c.seconds / o.seconds for c, o in zip(careful_faulted, ours_faulted, strict=True)],
        note="careful script seconds / videoferry seconds, both under the same faults, round by round "
        f"({_each(list(zip(careful_faulted, ours_faulted, strict=True)), _pair)}); above 1 = ours faster",
    )
    yield with_rounds(
        "videoferry_faults_vs_clean",
        [o.seconds / ours_plain.seconds for o in ours_faulted],
        note=f"videoferry's faulted seconds / its clean run's ({ours_plain.seconds:.1f} s, the same emulator "
        "at the same time), round by round; 1.0 = the faults cost nothing",
    )
    yield Figure(
        "baseline_cpu_seconds",
        cpu,
        "s",
        f"user + system CPU of this benchmark's processes (script threads, its emulator, videoferry) in "
        f"{wall:.0f} s of wall time",
    )


def _pair(pair: tuple[Run, Run]) -> str:
    return f"{pair[0].seconds:.1f} s / {pair[1].seconds:.1f} s"


def _folder(root: Path, name: str) -> Path:
    """A run's own working folder (its ledger and limiter store) under the benchmark's."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
