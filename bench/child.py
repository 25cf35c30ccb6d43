"""The measured process: `python -m bench.child` runs one job read from stdin and prints its peak RSS.

Jobs (JSON on stdin): {"job": "migrate" | "apply" | "archive" | "backup", "options": {the job's options}}
(settings from VIDEOFERRY_* in the environment, S3 endpoint from AWS_ENDPOINT_URL), {"job": "plan",
"inventory", "ledger"}, or {"job": "list", "base_url", "token"} (a Vimeo account's listing, no chapters).
The last stdout line is JSON: peak_rss and baseline_rss in bytes (baseline: after imports, before the
job), seconds, cpu_seconds (the job's own CPU, user + system, imports excluded; not for plan),
cpu_system_seconds (its system share), gc (the collector's passes and seconds by generation while the job
ran), and what the job reports.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _rss_now() -> int:
    """Resident set size now, in bytes (Linux /proc)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize()


def _peak_rss() -> int:
    """Peak resident set size of this process so far, in bytes (VmHWM of its own memory map).

    Not ru_maxrss: Linux carries the parent's peak into it across fork + exec, so a child of a big parent
    would report the parent's size.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_now() -> tuple[float, float]:
    """CPU seconds (user, system; every thread) this process has used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


class _Collections:
    """The cyclic garbage collector's passes and seconds, by generation, while it is installed (gc.callbacks):
    a full pass walks every object the process holds, so a run that makes them often grows per item."""

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.passes[info["generation"]] += 1
            self.seconds[info["generation"]] += time.perf_counter() - self._began

    def __enter__(self) -> _Collections:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)

    def report(self) -> dict[str, list[float]]:
        return {"passes": list(self.passes), "seconds": [round(s, 6) for s in self.seconds]}


def _plan(spec: dict[str, Any]) -> dict[str, Any]:
    from videoferry.state.ledger import Ledger
    from videoferry.tasks.migrate.plan import read_plan, store_plan

    baseline = _rss_now()
    started = time.perf_counter()
    plan = read_plan(spec["inventory"], parent_id=spec.get("parent_id"), via="auto", s3=None)
    ledger = Ledger.open(spec["ledger"])
    try:
        run_id = ledger.start_run("plan", {})
        result = store_plan(plan, ledger, run_id)
        ledger.finish_run(run_id, "succeeded", {})
    finally:
        ledger.close()
    seconds = time.perf_counter() - started
    return {
        "baseline_rss": baseline,
        "seconds": seconds,
        "added": result.added,
        "rejected": len(plan.rejected_rows),
    }


def _list(spec: dict[str, Any]) -> dict[str, Any]:
    from videoferry.connectors.platforms.listing import list_source, parse_platform_source
    from videoferry.connectors.platforms.vimeo import VimeoClient

    baseline = _rss_now()
    started = time.perf_counter()
    with VimeoClient(spec["base_url"], spec["token"]) as client:
        listing = list_source(parse_platform_source("vimeo:"), client, chapters=False)
    return {
        "baseline_rss": baseline,
        "seconds": time.perf_counter() - started,
        "videos": len(listing.videos),
        "calls": listing.calls,
    }


def _migrate_details(outcome: Any) -> dict[str, Any]:
    summary = outcome.summary
    return {
        "bytes_uploaded": int(summary.get("bytes_uploaded") or 0),
        "counts": summary.get("counts", {}),
        "reasons": outcome.reasons[:5],
    }


def _apply_details(outcome: Any) -> dict[str, Any]:
    return {
        "exit_code": outcome.exit_code,
        "counts": dict(outcome.counts),
        "reasons": (outcome.reasons + outcome.refused)[:5],
    }


def _copy_details(outcome: Any) -> dict[str, Any]:
    return {"exit_code": outcome.exit_code, "bytes": outcome.bytes, "reasons": outcome.reasons[:5]}


#: The jobs a child runs through their plain runner: options class, runner ("module:attribute"), and what
#: of the outcome the result carries.
RUNNERS: dict[str, tuple[str, str, Callable[[Any], dict[str, Any]]]] = {
    "migrate": (
        "videoferry.flows.migrate.options:MigrateOptions",
        "videoferry.flows.migrate.runner:run_migration",
        _migrate_details,
    ),
    "apply": (
        "videoferry.flows.apply.options:ApplyOptions",
        "videoferry.flows.apply.runner:run_apply",
        _apply_details,
    ),
    "archive": (
        "videoferry.flows.archive.options:ArchiveOptions",
        "videoferry.flows.archive.runner:run_archive",
        _copy_details,
    ),
    "backup": (
        "videoferry.flows.backup.options:BackupOptions",
        "videoferry.flows.backup.runner:run_backup",
        _copy_details,
    ),
}


def _run(spec: dict[str, Any]) -> dict[str, Any]:
    """One job's run (its options from the spec, settings from the environment): seconds and CPU from the
    runner's call to its return, with what RUNNERS says the job reports."""
    import importlib

    from videoferry.connectors.config import Settings

    def load(path: str) -> Any:
        module, _, attribute = path.partition(":")
        return getattr(importlib.import_module(module), attribute)

    declaration, runner, details = RUNNERS[spec["job"]]
    opts = load(declaration)(**spec["options"])
    settings = Settings.from_env()
    run = load(runner)  # its imports (about a second of CPU) before the clocks start, as the docstring says
    baseline = _rss_now()
    user, system = _cpu_now()
    started = time.perf_counter()
    with _Collections() as collections:
        outcome = run(opts, settings)
    seconds = time.perf_counter() - started
    user_after, system_after = _cpu_now()
    return {
        "baseline_rss": baseline,
        "seconds": seconds,
        "cpu_seconds": user_after - user + system_after - system,
        "cpu_system_seconds": system_after - system,
        "gc": collections.report(),
        **details(outcome),
    }


JOBS = {"plan": _plan, "list": _list, **{name: _run for name in RUNNERS}}


def measure(
    spec: dict[str, Any],
    env: dict[str, str] | None = None,
    timeout: float = 900.0,
    module: str = "bench.child",
) -> dict[str, Any]:
    """Run one job in a fresh child process (`python -m module`, the spec as JSON on stdin) and return the
    JSON result it prints last.
    """
    import os
    import subprocess

    from bench.services import REPO

    proc = subprocess.run(
        [sys.executable, "-m", module],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-5:]
        job = spec.get("job", "job")
        raise RuntimeError(f"{module} {job} failed ({proc.returncode}): {' | '.join(tail)}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


#: When set, the job runs under py-spy (sampling every thread) and its profile goes to this file (raw format:
#: collapsed stacks with their counts, to FILE.JOB; `python -m bench.profile FILE.JOB` sums them). py-spy's
#: own output goes to FILE.JOB.log.
PYSPY_ENV = "VIDEOFERRY_BENCH_PYSPY"
#: How long py-spy may take to attach (it prints "Sampling process" once it reads the interpreter's state).
PYSPY_ATTACH_SECONDS = 30.0


def _attached(log: Path, proc: Any, bound: float) -> None:
    """Wait until py-spy says it samples (its log), or raise with what it said: it exited, or the bound."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        said = log.read_text(errors="replace") if log.exists() else ""
        if "Sampling process" in said:
            return
        if proc.poll() is not None:
            lines = said.strip().splitlines() or [""]
            reason = next((line for line in lines if line.startswith("Error")), lines[-1])
            raise RuntimeError(f"py-spy did not attach (exit {proc.returncode}): {reason[:300]}")
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"py-spy did not attach within {bound:.0f} s (see {log})")


def _profiled(spec: dict[str, Any]) -> dict[str, Any]:
    """The job under `py-spy record --pid` of this process when PYSPY_ENV names an output file.

    The job starts once py-spy has attached (not after a fixed pause: under load an attach took longer than
    the 0.5 s once slept here, and the job's first samples were lost or py-spy failed mid-start)."""
    import os
    import shutil
    import signal
    import subprocess

    out = os.environ.get(PYSPY_ENV)
    if not out:
        return JOBS[spec["job"]](spec)
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    target = f"{out}.{spec['job']}"
    log = Path(f"{target}.log")
    # --nonblocking: a paused process's threads all look busy to py-spy's idle test (a script of one thread
    # spinning and three sleeping 5 ms at a time: the sleepers had 458 samples paused, 67 not, against 772
    # and 814 of the spinner), so a paced run's limiter sleeps were read as a quarter of its work.
    command = [spy, "record", "--pid", str(os.getpid()), "--nonblocking", "--format", "raw", "--rate", "200"]
    command += ["-o", target]
    with log.open("w") as err:
        proc = subprocess.Popen(command, stdout=err, stderr=subprocess.STDOUT)
    _attached(log, proc, PYSPY_ATTACH_SECONDS)
    try:
        return JOBS[spec["job"]](spec)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)


def main() -> None:
    """Run the job from stdin and print the JSON result as the last line."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    spec = json.loads(sys.stdin.read())
    result = _profiled(spec)
    result["peak_rss"] = _peak_rss()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
