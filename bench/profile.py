"""`python -m bench.profile FILE [N]`: the top costs of a py-spy raw profile (bench.child's PYSPY_ENV)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path


def costs(path: Path) -> tuple[Counter[str], Counter[str], int]:
    """(samples per function anywhere on the stack, per innermost function, all samples); py-spy records
    busy threads only (no --idle), so a sample is CPU."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if f]
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    return inclusive, own, total


def main() -> None:
    """Print the top N (default 25) functions by samples on the stack and by own samples."""
    path = Path(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    inclusive, own, total = costs(path)
    print(f"{total} busy samples")
    for title, table in (("on the stack", inclusive), ("own", own)):
        print(f"# {title}")
        for frame, n in table.most_common(top):
            print(f"{n / max(total, 1):6.1%}  {frame}")


if __name__ == "__main__":
    main()
