"""`python -m bench.profile FILE [N]`: a py-spy profile's top costs; `SMALL:ITEMS BIG:ITEMS [N]`: growth."""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from pathlib import Path


def _lock_waits() -> tuple[str, ...]:
    """The frames of a thread waiting for the ledger's lock: the `with self.lock:` line of LedgerDB.write and
    LedgerDB.read, found in their source (written out, they went stale when db.py moved and the waits were
    counted as work: a third of an apply profile's samples)."""
    from videoferry.state.db import LedgerDB

    frames = []
    for name in ("write", "read"):
        lines, start = inspect.getsourcelines(inspect.unwrap(getattr(LedgerDB, name)))
        at = next(start + i for i, line in enumerate(lines) if line.strip() == "with self.lock:")
        frames.append(f"LedgerDB.{name} (videoferry/state/db.py:{at})")
    return tuple(frames)


#: Innermost frames that are a thread waiting, not working (py-spy's idle test misses a share of such
#: samples: a thread blocked on a lock was sampled about one time in ten while py-spy paused the process, and
#: with --nonblocking the limiter's sleep, socket reads and idle workers still show): the ledger's lock.
WAITS = _lock_waits()


def costs(path: Path) -> tuple[Counter[str], Counter[str], int]:
    """(samples per function anywhere on the stack, per innermost function, all samples); py-spy records
    busy threads only (no --idle), so a sample is mostly CPU, but for the waits it takes for busy (the lock's,
    WAITS, left out; the others not)."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if f]
        if frames[-1] in WAITS:
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
