"""Chaos harness: suite size from the environment, seeded fault scripts, inventories and the three checks."""

from __future__ import annotations

import hashlib
import os
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.control import EmulatorControl, Workspace
from emulator.variants import EXCLUSIVE
from state.ledger import Ledger
from tests.flows.helpers import write_inventory

#: Published limits of the service (spec section 8); the chaos runs keep them.
PER_SECOND = 10
PER_MINUTE = 300
#: Item end states that need an error code and message.
FAILED_STATES = ("failed", "error", "aborted")
END_STATES = ("finished", *FAILED_STATES)


def chaos_seeds() -> list[int]:
    """Seeds to run: VIDEOFERRY_CHAOS_SEEDS (default 3 for `make test`; `make chaos` sets 20)."""
    return list(range(1, int(os.environ.get("VIDEOFERRY_CHAOS_SEEDS", "3")) + 1))


def chaos_items(seed: int) -> int:
    """Items of one seed's migration: VIDEOFERRY_CHAOS_ITEMS is "N" or "LO-HI" (the seed picks in range).

    Default: 50 in the normal suite; 50-200 when VIDEOFERRY_CHAOS_SEEDS is set (the long run).
    """
    default = "50-200" if "VIDEOFERRY_CHAOS_SEEDS" in os.environ else "50"
    spec = os.environ.get("VIDEOFERRY_CHAOS_ITEMS", default).strip()
    if "-" in spec:
        low, high = (int(part) for part in spec.split("-", 1))
        return random.Random(seed * 7919).randint(low, high)
    return int(spec)


def chaos_rounds() -> int:
    """Killed runs per seed in the kill -9 test (VIDEOFERRY_CHAOS_KILLS, default 3)."""
    return int(os.environ.get("VIDEOFERRY_CHAOS_KILLS", "3"))


# -- inventories ---------------------------------------------------------------------------------------


def chaos_rows(make: Callable[..., Path], n: int, seed: int) -> list[dict[str, Any]]:
    """n rows of real short clips of unique sizes: unicode titles, chapters and tags on some.

    A few rows share a title in the same parent (lectures all called "Introduction", GOPR0001.MP4 from
    several cards, whose title is derived from the file name).
    """
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    sizes: set[int] = set()
    for i in range(n):
        clip = _unique_clip(make, rng, i, sizes)
        title = rng.choice(("Chaos {s}-{i}", "Хаос {s}-{i}", "混沌 {s}-{i}", "Café {s}-{i} 🎬")).format(
            s=seed, i=i
        )
        share = rng.random()
        if share < 0.08:
            title = "Introduction"
        elif share < 0.14:  # a camera's first file: the title is derived from the same file name
            folder = clip.parent / f"card{i}"
            folder.mkdir()
            clip = clip.rename(folder / "GOPR0001.MP4")
            title = ""
        row: dict[str, Any] = {"source": str(clip), "title": title, "tags": "", "chapters": ""}
        if rng.random() < 0.3:
            row["tags"] = "chaos;seed-" + str(seed)
        if rng.random() < 0.3:
            row["chapters"] = '[{"time": 0, "title": "Start"}, {"time": 0.25, "title": "Глава"}]'
        rows.append(row)
    return rows


def _unique_clip(make: Callable[..., Path], rng: random.Random, i: int, sizes: set[int]) -> Path:
    """A clip whose size no other clip of the inventory has (the checks tell videos apart by their bytes)."""
    for _ in range(20):
        seconds = rng.choice((0.5, 1.0, 1.5))
        clip = make(
            seconds, width=rng.choice((160, 176, 192)), height=120, audio=rng.random() < 0.7, name=f"c{i}.mp4"
        )
        size = clip.stat().st_size
        if size not in sizes:
            sizes.add(size)
            return clip
        clip.unlink()
    raise AssertionError("could not make a clip of a unique size")


def expected_title(row: dict[str, Any]) -> str:
    """The title a row's video must end with: the row's, else the file name without extension."""
    return str(row["title"]) or Path(row["source"]).stem


# -- service variants ----------------------------------------------------------------------------------

#: Variants a migration meets, drawn per seed (webhook-alt-shape needs webhooks: tests/flows covers it; copy,
#: move, cut and concat variants need operations migrate does not make: tests/connectors covers them).
CHAOS_VARIANTS = (
    "ignore-title-filter",
    "ignore-parent-filter",
    "page-cap-25",
    "page-cap-10",
    "no-total",
    "list-lag",
    "update-put",
    "chapters-post",
    "video-put",
    "clock-ahead",
    "clock-behind",
    "whole-seconds",
    "ids-undashed",
    "ids-upper",
    "ids-base58",
    "no-original",
    "headers-utf8",
    "init-session-id",
    "endpoint-expiry",
    "tus-rate-limited",
)


def draw_variants(seed: int) -> tuple[list[str], dict[str, float]]:
    """A seeded combination of variants (about a third of them) and their parameters."""
    rng = random.Random(seed * 104729 + 7)
    chosen = [name for name in CHAOS_VARIANTS if rng.random() < 0.35]
    for group in EXCLUSIVE:
        present = [n for n in chosen if n in group]
        for extra in present[1:]:
            chosen.remove(extra)
    params = {"endpoint_ttl_seconds": rng.choice((3.0, 5.0)), "list_lag_seconds": rng.choice((1.0, 3.0))}
    return chosen, params


def write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """The rows as a CSV inventory."""
    return write_inventory(path, rows)


# -- faults --------------------------------------------------------------------------------------------

API_PATHS = "^/v(1|2)/"
UPLOAD_ENDPOINT = "^/upload/"


def base_rules(rng: random.Random) -> list[dict[str, Any]]:
    """The steady faults of one seed: every kind the issue names, at seed-chosen rates."""
    status = rng.choice((500, 502, 503))
    return [
        # 5xx answered before anything happens, on API calls and on the upload endpoint
        {"kind": "error", "status": status, "path": API_PATHS, "rate": rng.uniform(0.03, 0.1)},
        {"kind": "error", "status": 503, "path": UPLOAD_ENDPOINT, "rate": rng.uniform(0.02, 0.06)},
        # added latency
        {"kind": "latency", "ms": rng.choice((50, 150, 400)), "rate": rng.uniform(0.1, 0.3)},
        # the write is committed, then the connection is dropped: create, init, tus PATCH, update, chapters
        {"kind": "drop_after_commit", "path": "^/v2/(init|video)$", "rate": rng.uniform(0.1, 0.3)},
        {
            "kind": "drop_after_commit",
            "method": "PATCH",
            "path": UPLOAD_ENDPOINT,
            "rate": rng.uniform(0.05, 0.15),
        },
        # updates (PATCH, or PUT under update-put) and chapters (PUT, or POST under chapters-post)
        *(
            {"kind": "drop_after_commit", "method": method, "path": path, "rate": rng.uniform(0.1, 0.3)}
            for method, path in (("PATCH", "^/v1/videos/"), ("PUT", "^/v1/videos/"), ("POST", "/chapters$"))
        ),
        # tus PATCH bodies cut mid-way
        {
            "kind": "truncate_body",
            "method": "PATCH",
            "path": UPLOAD_ENDPOINT,
            "rate": rng.uniform(0.05, 0.15),
            "fraction": rng.choice((0.0, 0.3, 0.5, 0.9)),
        },
        # single-request upload bodies cut mid-way (the video is left in error: it is deleted and sent again)
        {
            "kind": "truncate_body",
            "path": "^/v2/video$",
            "rate": rng.uniform(0.05, 0.15),
            "fraction": rng.choice((0.0, 0.3, 0.7)),
        },
        # a forced 429 (each pauses every caller for 5 s; FaultScript adds more now and then)
        {"kind": "rate_limit", "path": API_PATHS, "rate": 0.05, "times": 1},
    ]


def burst_rule(rng: random.Random) -> dict[str, Any]:
    """A burst: every API call fails with a 5xx for the next few calls."""
    return {"kind": "error", "status": rng.choice((500, 503)), "path": API_PATHS, "times": rng.randint(3, 8)}


@dataclass
class FaultScript:
    """Steady faults plus 5xx bursts switched on and off from a background thread, all drawn from a seed."""

    control: EmulatorControl
    ws: Workspace
    seed: int
    bursts: bool = True
    rng: random.Random = field(init=False)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    applied: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.rules = base_rules(self.rng)

    def start(self) -> FaultScript:
        """Install the steady faults and start the burst switcher."""
        self.control.set_faults(self.ws, self.rules, seed=self.seed)
        if self.bursts:
            self._thread = threading.Thread(target=self._run, name="chaos-bursts", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        step = 0
        while not self._stop.wait(self.rng.uniform(1.5, 4.0)):
            step += 1
            rules = [burst_rule(self.rng), *self.rules] if step % 2 else list(self.rules)
            if step % 4 != 0:  # setting rules restarts their `times`: another forced 429 every 4th step only
                rules = [r for r in rules if r["kind"] != "rate_limit"]
            self.control.set_faults(self.ws, rules, seed=self.seed * 1000 + step)
            self.applied += 1

    def stop(self) -> None:
        """Stop switching and remove every fault."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.control.clear_faults(self.ws)

    def __enter__(self) -> FaultScript:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- checks --------------------------------------------------------------------------------------------


def max_in_window(times: Sequence[float], window: float) -> int:
    """Most times inside any half-open window [t, t + window) (two pointers over sorted times)."""
    ordered = sorted(times)
    best = 0
    left = 0
    for right, moment in enumerate(ordered):
        while moment - ordered[left] >= window:
            left += 1
        best = max(best, right - left + 1)
    return best


def api_attempts(control: EmulatorControl, ws: Workspace, since: float | None = None) -> list[dict[str, Any]]:
    """Every request our client sent with the token (API host and /v2 on the upload host), 429s included.

    Stricter than counting `api: true` entries (those the emulator admitted): a request the emulator
    refused with a 429 was still sent, so it counts too. Upload-endpoint requests are not API calls.
    """
    return [
        r
        for r in control.requests(ws.workspace_id, since=since)
        if not r["path"].startswith("/upload/") and (r["host"] == "api" or r["path"].startswith("/v2/"))
    ]


def busiest_window(entries: Sequence[dict[str, Any]], window: float) -> list[dict[str, Any]]:
    """The entries of the busiest half-open window of `window` seconds (for failure messages)."""
    ordered = sorted(entries, key=lambda r: r["time"])
    best: tuple[int, int] = (0, 0)
    left = 0
    for right, entry in enumerate(ordered):
        while entry["time"] - ordered[left]["time"] >= window:
            left += 1
        if right - left + 1 > best[1] - best[0]:
            best = (left, right + 1)
    return ordered[best[0] : best[1]]


@dataclass
class RateFigures:
    """The busiest second and minute seen in the request log."""

    calls: int
    per_second: int
    per_minute: int
    refused_429: int
    busiest_second: list[dict[str, Any]] = field(default_factory=list)

    def assert_inside_limits(self) -> None:
        """The service's published limits were never exceeded."""
        shown = [(round(r["time"], 3), r["method"], r["path"][:20], r["status"]) for r in self.busiest_second]
        assert self.per_second <= PER_SECOND, f"{self.per_second} API calls in one second: {shown}"
        assert self.per_minute <= PER_MINUTE, f"{self.per_minute} API calls in one minute"


def rate_figures(control: EmulatorControl, ws: Workspace, since: float | None = None) -> RateFigures:
    """Count the API calls of a workspace in the tightest 1 s and 60 s windows.

    Requests to upload addresses are not API calls; under the tus-rate-limited variant the service counts
    them too, which the client learns from their first 429 (they pass the limiter from then on).
    """
    attempts = api_attempts(control, ws, since)
    times = [r["time"] for r in attempts]
    return RateFigures(
        calls=len(times),
        per_second=max_in_window(times, 1.0),
        per_minute=max_in_window(times, 60.0),
        refused_429=sum(1 for r in attempts if r["status"] == 429),
        busiest_second=busiest_window(attempts, 1.0),
    )


def ledger_items(path: Path) -> list[Any]:
    """Every item of a ledger (read-only open)."""
    ledger = Ledger.open(path, create=False)
    try:
        return ledger.items()
    finally:
        ledger.close()


def assert_no_duplicates(control: EmulatorControl, ws: Workspace, path: Path) -> None:
    """Never more than one video per item, at any point (also between killed runs).

    Every video in the service must be the ledger's video of exactly one item, or the video of an item whose
    video id is not known yet (same title as its create sent). Create titles are unique per parent within a
    ledger (shared titles travel as placeholders), so a second video for an item cannot hide.
    """
    items = ledger_items(path)
    owners: dict[str, str] = {}
    for item in items:
        if item.video_id:
            assert item.video_id not in owners, f"video {item.video_id} owned by two items"
            owners[item.video_id] = item.key
    # An item whose video id is not known yet (its create's outcome is unknown, or init named a session) is
    # matched by the title its create sent: unique per parent within the ledger.
    unknown = {i.create_title: i.key for i in items if not i.video_id and i.create_title}
    per_item: dict[str, int] = {}
    for video in control.videos(ws):
        key = owners.get(video["id"]) or unknown.get(video["title"])
        assert key is not None, f"a video no item owns: {video['title']!r} ({video['status']})"
        per_item[key] = per_item.get(key, 0) + 1
    doubled = sorted(k for k, n in per_item.items() if n > 1)
    assert not doubled, f"items with more than one video: {doubled[:5]}"


def assert_settled(path: Path) -> dict[str, int]:
    """Every item is in an end state; failed ones carry an error code and message. Returns the counts."""
    counts: dict[str, int] = {}
    for item in ledger_items(path):
        counts[item.state] = counts.get(item.state, 0) + 1
        assert item.state in END_STATES, f"item {item.key} (row {item.row}) left in {item.state}"
        if item.state in FAILED_STATES:
            assert item.error_code and item.error_message, f"item {item.key} {item.state} without a reason"
    return counts


def assert_exactly_one_each(
    control: EmulatorControl, ws: Workspace, path: Path, rows: Sequence[dict[str, Any]]
) -> None:
    """After the clean rerun: every item finished, and the service holds exactly its video for each, done."""
    items = ledger_items(path)
    assert len(items) == len(rows)
    not_finished = [(i.key, i.state, i.error_code, i.error_message) for i in items if i.state != "finished"]
    assert not not_finished, not_finished[:5]
    videos = {v["id"]: v for v in control.videos(ws)}
    assert sorted(videos) == sorted(i.video_id for i in items if i.video_id), (
        "videos != the ledger's video ids"
    )
    by_source = {r["source"]: r for r in rows}
    for item in items:
        video = videos[item.video_id or ""]
        row = by_source[item.source]
        assert video["status"] == "done"
        assert video["title"] == expected_title(row)
        source = Path(row["source"])
        assert video["file_size"] == source.stat().st_size
        assert video["md5"] == hashlib.md5(source.read_bytes()).hexdigest(), f"{item.key}: other bytes"
        if row["tags"]:
            assert video["tags"] == row["tags"].split(";")
        if row["chapters"]:
            assert [c["time"] for c in video["chapters"]["items"]] == [0, 250]
