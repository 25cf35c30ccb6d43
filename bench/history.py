"""`python -m bench.history`: each target over every whole run a RESULTS.md has held in git, met or not.

Issue 49: "met once is not met". A RESULTS.md is written whole by one run (bench/results.py), so each
committed version of the file is one run's verdicts; this reads them all back from git (every commit that
changed the file, oldest first), keeps one per run (a later commit that only edited the hand-written notes
holds the same run: same commit and date in its header), leaves out the format samples (`--quick`, or a
busy machine's `--header`: a bold first line) and the files written before one run wrote them whole (no
`- commit X, DATE UTC, N minutes` header), and prints for each target how many runs measured it, its values
(least, median, most) and how many read each verdict. With `--runs`, each target's values in run order.

    python -m bench.history                          # bench/RESULTS.md, every whole run
    python -m bench.history bench/RESULTS-scale.md --runs
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.figures import number
from bench.services import REPO

#: The header line of a file written whole by one run (bench/results.write_results).
_HEADER = re.compile(
    r"^- commit (\S+)( \(with uncommitted changes in the work tree\))?, (\S+ \S+) UTC, [\d.]+ minutes$", re.M
)
#: A row of the targets table: | what | `name` | <= bound | value | spread | verdict |
_ROW = re.compile(r"^\| [^|]* \| `([a-z0-9_]+)` \| ([<>]= \S+) \| ([^|]+?) \| ([^|]*?) \| ([^|]*?) \|$", re.M)
#: The verdicts in the order they are counted; "(one run)" is dropped (the spread column says it).
VERDICTS = ("yes", "no", "not resolved")


@dataclass(frozen=True)
class Verdict:
    """One target as one run's targets table gave it."""

    bound: str
    value: float
    spread: str
    met: str


@dataclass(frozen=True)
class Run:
    """One whole run's targets table: the commit it measured, when, and each target it measured."""

    commit: str
    started: str
    dirty: bool
    targets: dict[str, Verdict]

    @property
    def label(self) -> str:
        """The commit, starred when the work tree had uncommitted changes."""
        return self.commit + ("*" if self.dirty else "")


def read_run(text: str) -> Run | None:
    """The run a RESULTS.md text holds, or None: a format sample, or a file not written whole by one run."""
    body = text.split("\n\n", 2)
    if len(body) > 1 and body[1].startswith("**"):
        return None  # a format sample says so in bold before anything else
    header = _HEADER.search(text)
    if header is None:
        return None
    targets: dict[str, Verdict] = {}
    for name, bound, value, spread, met in _ROW.findall(text):
        if value == "not measured":
            continue
        try:
            number_value = float(value)
        except ValueError:
            continue
        targets[name] = Verdict(bound, number_value, spread, met.replace(" (one run)", ""))
    return Run(header.group(1), header.group(3), header.group(2) is not None, targets)


def versions(path: Path, repo: Path = REPO) -> list[str]:
    """The text of every committed version of path, oldest first (a commit that deleted it gives none)."""
    name = path.resolve().relative_to(repo.resolve()).as_posix()
    log = subprocess.run(
        ["git", "log", "--format=%H", "--reverse", "--", name],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    texts = []
    for sha in log.stdout.split():
        shown = subprocess.run(["git", "show", f"{sha}:{name}"], cwd=repo, capture_output=True, text=True)
        if shown.returncode == 0:
            texts.append(shown.stdout)
    return texts


def whole_runs(texts: list[str]) -> list[Run]:
    """One Run per whole run, in the order the texts came (a run committed again counts once)."""
    runs: list[Run] = []
    seen: set[tuple[str, str]] = set()
    for text in texts:
        run = read_run(text)
        if run is None or (run.commit, run.started) in seen:
            continue
        seen.add((run.commit, run.started))
        runs.append(run)
    return runs


def summary(runs: list[Run], each_run: bool = False) -> list[str]:
    """A markdown table: per target, the runs that measured it, its bounds, least / median / most, and how
    many runs read each verdict; with each_run, a line per target of its value and verdict in every run."""
    names: list[str] = []
    for run in runs:
        names += [name for name in run.targets if name not in names]
    lines = [
        f"{len(runs)} whole runs, {runs[0].started} to {runs[-1].started} UTC: "
        + ", ".join(run.label for run in runs)
        if runs
        else "no whole run found",
        "",
        "| figure | bound | runs | least / median / most | " + " | ".join(VERDICTS) + " |",
        "|" + "---|" * (4 + len(VERDICTS)),
    ]
    for name in names:
        held = [run.targets[name] for run in runs if name in run.targets]
        values = [v.value for v in held]
        bounds = ", ".join(sorted({v.bound for v in held}))
        counts = Counter(v.met for v in held)
        spread = " / ".join(number(x) for x in (min(values), statistics.median(values), max(values)))
        verdicts = " | ".join(str(counts.get(v, 0)) for v in VERDICTS)
        lines.append(f"| `{name}` | {bounds} | {len(held)} | {spread} | {verdicts} |")
    if each_run:
        lines.append("")
        for name in names:
            told = [
                f"{run.label} {number(run.targets[name].value)} {run.targets[name].met}"
                for run in runs
                if name in run.targets
            ]
            lines.append(f"- `{name}`: " + "; ".join(told))
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the summary of the file's whole runs."""
    parser = argparse.ArgumentParser(prog="python -m bench.history", description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(REPO / "bench" / "RESULTS.md"))
    parser.add_argument("--runs", action="store_true", help="each target's values in run order too")
    args = parser.parse_args(argv)
    path = Path(args.file)
    if not path.is_absolute():
        path = Path.cwd() / path
    try:
        texts = versions(path, REPO)
    except (ValueError, subprocess.CalledProcessError) as exc:
        print(f"{args.file}: not a file of this repository's history ({exc})", file=sys.stderr)
        return 2
    print("\n".join(summary(whole_runs(texts), args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
