"""Workload builders shared by the benchmarks: clips, big files, inventories, settings, disk checks."""

from __future__ import annotations

import csv
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from videoferry.connectors.config import Settings
from videoferry.emulator.control import Workspace

MIB = 1024 * 1024
#: Random block repeated to fill big files (fast to write; nothing on the path compresses or dedupes).
_BLOCK = 16 * MIB


@dataclass
class BenchConfig:
    """What a benchmark run is asked to do: quick (tiny sizes) or full, and where its files go."""

    quick: bool
    workdir: Path
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """Remember a remark (scale-downs and the like) for RESULTS.md; also shown on stderr."""
        self.notes.append(text)
        print(f"  note: {text}", file=sys.stderr, flush=True)

    def subdir(self, name: str) -> Path:
        """A fresh directory under the work directory."""
        path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.workdir))
        return path


def clip_bytes(seconds: float = 0.4, *, width: int = 32, height: int = 32) -> bytes:
    """The bytes of one small real H.264/AAC mp4 (the emulator probes it and ends it done)."""
    from videoferry.emulator.media import make_clip

    with tempfile.TemporaryDirectory(prefix="bench-clip-") as tmp:
        path = make_clip(Path(tmp) / "clip.mp4", seconds, width=width, height=height, fps=5)
        return path.read_bytes()


def write_clips(directory: Path, count: int, data: bytes, *, prefix: str = "clip") -> list[Path]:
    """Write `count` copies of one clip as prefix-00001.mp4 ... (distinct names, so distinct titles)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(1, count + 1):
        path = directory / f"{prefix}-{i:05d}.mp4"
        path.write_bytes(data)
        paths.append(path)
    return paths


def write_random_file(path: Path, size: int) -> Path:
    """A file of `size` bytes: one 16 MiB random block repeated (not sparse: every byte is on disk)."""
    block = os.urandom(min(_BLOCK, max(size, 1)))
    with open(path, "wb") as out:
        left = size
        while left > 0:
            n = min(left, len(block))
            out.write(block[:n])
            left -= n
    return path


def write_inventory(path: Path, sources: Sequence[str], titles: Sequence[str] | None = None) -> Path:
    """A CSV inventory with a source column (and title when given)."""
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["source", "title"] if titles is not None else ["source"])
        for i, source in enumerate(sources):
            writer.writerow([source, titles[i]] if titles is not None else [source])
    return path


def write_rows(path: Path, rows: Sequence[dict[str, str]]) -> Path:
    """A CSV inventory with the columns of the first row (every row has the same keys; "" = not given)."""
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def settings_for(ws: Workspace, rate_per_second: int = 10, rate_per_minute: int = 300) -> Settings:
    """Client settings for an emulator workspace with the given client-side rate limits."""
    return Settings(
        api_url=ws.base_url,
        upload_url=ws.upload_url,
        token=ws.token,
        rate_per_second=rate_per_second,
        rate_per_minute=rate_per_minute,
    )


def free_bytes(path: Path) -> int:
    """Free space on the file system holding `path`."""
    return shutil.disk_usage(path).free


def fit_size(cfg: BenchConfig, wanted: int, copies: float, what: str, minimum: int = 64 * MIB) -> int:
    """`wanted` bytes, or less when `copies` x that would leave under 2 GiB free (says so in a note)."""
    free = free_bytes(cfg.workdir)
    budget = free - 2 * 1024 * MIB
    if wanted * copies <= budget:
        return wanted
    size = max(minimum, int(budget / copies) // MIB * MIB)
    cfg.note(
        f"{what}: only {free // MIB} MiB free under {cfg.workdir}; scaled from {wanted // MIB} MiB "
        f"to {size // MIB} MiB"
    )
    return size


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a webhook receiver the emulator is told about first)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """These variables in this process's environment for the block, the earlier values restored after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
