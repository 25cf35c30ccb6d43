"""`python -m bench.profile FILE [N]`: a py-spy profile's top costs; `SMALL:ITEMS BIG:ITEMS [N]`: growth."""

from __future__ import annotations

import functools
import linecache
import re
import sys
from collections import Counter
from pathlib import Path

#: Source lines where a thread waits rather than works: a lock's `with` (the ledger's, the limiter's), a
#: sleep (the limiter's `sleep_until_room`), a lock or condition's acquire (`Condition.wait`), an idle pool
#: worker's `get(block=True)`, a socket's `recv` (an answer not yet here). py-spy records busy threads only
#: (no --idle), but its idle test misses a share of them: paused, a thread blocked on the ledger's lock was
#: sampled about one time in ten; with --nonblocking the limiter's sleep, socket reads and idle workers
#: still showed (a paced apply at 100k: three samples in ten; with the locks, half). Matched on the line's
#: text, so a line that moves (db.py did, and a third of an apply profile's samples were lock waits read as
#: work) or a library's version does not make them count again.
WAIT_LINES = re.compile(
    r"^with self\._?lock\b|\btime\.sleep\(|\.acquire\(|\.get\(block=True\)|\.recv(_into)?\("
)
_FRAME = re.compile(r"^.* \((?P<path>.+):(?P<line>\d+)\)$")


@functools.cache
def is_wait(frame: str) -> bool:
    """Whether a py-spy frame (`function (path:line)`, the path relative to an import root) is a line of
    WAIT_LINES, read from the source this Python imports (a frame whose file is not found: not a wait)."""
    found = _FRAME.match(frame)
    if found is None:
        return False
    relative, line = found["path"], int(found["line"])
    for root in ("", *sys.path):
        path = Path(root, relative)
        if path.is_file():
            return bool(WAIT_LINES.search(linecache.getline(str(path), line).strip()))
    return False


def costs(path: Path) -> tuple[Counter[str], Counter[str], int]:
    """(samples per function anywhere on the stack, per innermost function, all samples); py-spy records
    busy threads only (no --idle), so a sample is mostly CPU, but for the waits it takes for busy (is_wait:
    left out)."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if f]
        if is_wait(frames[-1]):
            continue
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    return inclusive, own, total


def growth(small: tuple[Path, int], big: tuple[Path, int], top: int) -> None:
    """Samples per 1000 items of each function at both sizes (on the stack), the largest growths first."""
    (a_path, a_items), (b_path, b_items) = small, big
    a_inc, a_own, a_total = costs(a_path)
    b_inc, b_own, b_total = costs(b_path)
    print(
        f"samples per 1000 items: all {a_total * 1000 / a_items:.0f} at {a_items}, "
        f"{b_total * 1000 / b_items:.0f} at {b_items}"
    )
    for title, a, b in (("on the stack", a_inc, b_inc), ("own", a_own, b_own)):
        print(f"# {title}: per 1000 items at {a_items} -> at {b_items} (extra per 1000 items)")
        rows = [(b[f] * 1000 / b_items - a[f] * 1000 / a_items, f) for f in set(a) | set(b)]
        for extra, frame in sorted(rows, reverse=True)[:top]:
            before, after = a[frame] * 1000 / a_items, b[frame] * 1000 / b_items
            print(f"{before:8.1f} -> {after:8.1f} ({extra:+8.1f})  {frame}")


def _sized(arg: str) -> tuple[Path, int]:
    path, _, items = arg.rpartition(":")
    if not path or not items.isdigit():
        raise SystemExit(f"expected FILE:ITEMS, got {arg!r}")
    return Path(path), int(items)


def main() -> None:
    """Print the top N (default 25) functions by samples on the stack and by own samples, or, given two
    FILE:ITEMS, the N functions whose samples per item grew most."""
    args = sys.argv[1:]
    top = int(args.pop()) if len(args) > 1 and args[-1].isdigit() else 25
    if len(args) == 2:
        growth(_sized(args[0]), _sized(args[1]), top)
        return
    inclusive, own, total = costs(Path(args[0]))
    print(f"{total} busy samples")
    for title, table in (("on the stack", inclusive), ("own", own)):
        print(f"# {title}")
        for frame, n in table.most_common(top):
            print(f"{n / max(total, 1):6.1%}  {frame}")


if __name__ == "__main__":
    main()
