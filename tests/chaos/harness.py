"""Chaos harness: suite size from the environment, inventories, service variants and seeded fault scripts."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from emulator.control import EmulatorControl, WebhookFaultKind, Workspace
from emulator.variants import EXCLUSIVE, REFUSING, VARIANTS
from tests.flows.helpers import write_inventory


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


def chaos_via(seed: int) -> str:
    """Every third seed sends files in one request (/v2/video: its bodies get cut too), the others by tus."""
    return "single" if seed % 3 == 0 else "tus"


def chaos_prefect(seed: int) -> bool:
    """Seed 1 runs through the Prefect flow (--prefect), the others plainly, as by default (time)."""
    return seed == 1


def chaos_webhooks(seed: int) -> bool:
    """Every second seed learns statuses by webhook (with credentials), under drawn webhook faults."""
    return seed % 2 == 0


#: The credentials the emulator sends its webhooks with in the webhook seeds (loopback, test-only).
CHAOS_HOOK_USER, CHAOS_HOOK_PASSWORD = "chaos-hook", "chaos-hook-password"
#: Every webhook fault the emulator has (emulator/README.md, "Webhook faults").
WEBHOOK_FAULTS: tuple[WebhookFaultKind, ...] = get_args(WebhookFaultKind)


def webhook_rules(seed: int) -> list[dict[str, Any]]:
    """The webhook faults of a webhook seed: every kind, each at a seed-chosen rate (forged claims and their
    credentials drawn by the emulator; late and out-of-order deliveries held up to 2 s)."""
    rng = random.Random(seed * 6007 + 26)
    rules = []
    for kind in WEBHOOK_FAULTS:
        rule = EmulatorControl.webhook_fault(kind, rate=rng.uniform(0.1, 0.3))
        if kind in ("webhook_late", "webhook_out_of_order"):
            rule["ms"] = rng.choice((500, 2000))
        rules.append(rule)
    return rules


# -- inventories ---------------------------------------------------------------------------------------

#: Titles several rows share in the same parent. "" is a camera's first file, GOPR0001.MP4 from several
#: cards: its title is derived from the file name. Non-ASCII ones travel as placeholders in headers anyway.
SHARED_TITLES = ("Introduction", "", "Введение", "Q&A 🎤")


def shared_groups(rng: random.Random, n: int) -> list[list[int]]:
    """A few groups of 2-4 row indices that share a title (about one row in four shares one)."""
    wanted = max(1, n // 12)
    order = rng.sample(range(n), n)
    groups: list[list[int]] = []
    while len(groups) < wanted and len(order) >= 2:
        size = min(rng.randint(2, 4), len(order))
        groups.append(sorted(order[:size]))
        order = order[size:]
    return groups


def chaos_rows(make: Callable[..., Path], n: int, seed: int) -> list[dict[str, Any]]:
    """n rows of real short clips, each file of its own size: unicode titles, chapters and tags on some, and
    on even seeds attachments.

    A few groups of rows share a title in the same parent (lectures all called "Introduction", GOPR0001.MP4
    from several cards, whose title is derived from the file name).
    """
    rng = random.Random(seed)
    # Even seeds' rows carry attachments, drawn apart (the rows' other draws stay as they were).
    materials = random.Random(seed * 7919 + 31) if seed % 2 == 0 else None
    shared = {
        i: SHARED_TITLES[g % len(SHARED_TITLES)]
        for g, group in enumerate(shared_groups(rng, n))
        for i in group
    }
    rows: list[dict[str, Any]] = []
    for i in range(n):
        clip = make(
            rng.choice((0.5, 1.0, 1.5)),
            width=rng.choice((160, 176, 192)),
            height=120,
            audio=rng.random() < 0.7,
            name=f"c{i}.mp4",
        )
        title = rng.choice(("Chaos {s}-{i}", "Хаос {s}-{i}", "混沌 {s}-{i}", "Café {s}-{i} 🎬")).format(
            s=seed, i=i
        )
        if i in shared:
            title = shared[i]
        if title == "":  # a camera's first file: the title is derived from the same file name
            folder = clip.parent / f"card{i}"
            folder.mkdir()
            clip = clip.rename(folder / "GOPR0001.MP4")
        row: dict[str, Any] = {"source": str(clip), "title": title, "tags": "", "chapters": ""}
        if rng.random() < 0.3:
            row["tags"] = "chaos;seed-" + str(seed)
        if rng.random() < 0.3:
            row["chapters"] = '[{"time": 0, "title": "Start"}, {"time": 0.25, "title": "Глава"}]'
        row["attachments"] = _attachments(materials, clip.parent, i)
        rows.append(row)
    sizes = [Path(r["source"]).stat().st_size for r in rows]
    assert len(set(sizes)) == len(sizes), "every file of a chaos inventory needs a size of its own"
    return rows


def _attachments(rng: random.Random | None, folder: Path, i: int) -> str:
    """Some rows' attachments: one or two small files of their own (made additional materials, once each)."""
    if rng is None or rng.random() >= 0.25:
        return ""
    paths = []
    for j in range(rng.choice((1, 2))):
        path = folder / f"c{i}-material{j}.txt"
        path.write_bytes(f"material {i}.{j} ".encode() * rng.randint(50, 400))
        paths.append(str(path))
    return "|".join(paths)


def write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """The rows as a CSV inventory."""
    return write_inventory(path, rows)


# -- service variants ----------------------------------------------------------------------------------

#: Variants of calls only setup makes: out of the migrate draws and bundles (there they would test nothing),
#: drawn by setup's chaos test instead (tests/chaos/test_chaos_setup.py: odd seeds) and run under both
#: readings by tests/flows/test_setup_share.py. codes-reset-share: a first code batch resets the event's
#: privacy_share (setup writes it again after the first batch).
SETUP_ONLY: frozenset[str] = frozenset({"codes-reset-share"})
#: Variants of a workspace that refuses creates (quota, billing; refuse-changes: its changes too): every run
#: under one stops by design, so they are out of every draw; tests/flows/test_workspace_refusal.py runs each
#: job under them.
REFUSALS: frozenset[str] = frozenset({"video-quota", "refuse-changes", *REFUSING})


def draw_variants(seed: int) -> tuple[list[str], dict[str, float]]:
    """A seeded combination of the emulator's variants (about a third of them, at most one of each exclusive
    group) and their parameters: upload addresses that expire within seconds, lists a few seconds late, a
    processing queue of a few slots.

    Every variant is in the draw but those SETUP_ONLY and REFUSALS, also those of operations a migration does
    not make (copy, move, cut, concat) and webhook-alt-shape (webhooks only in chaos_webhooks seeds): a
    migration must not care.
    """
    rng = random.Random(seed * 104729 + 7)
    chosen = [name for name in sorted(set(VARIANTS) - SETUP_ONLY - REFUSALS) if rng.random() < 0.35]
    for group in EXCLUSIVE:
        present = [n for n in chosen if n in group]
        for extra in rng.sample(present, len(present))[1:]:
            chosen.remove(extra)
    params = {
        "endpoint_ttl_seconds": rng.choice((2.5, 3.5, 5.0)),
        "list_lag_seconds": rng.choice((1.0, 3.0)),
        "clock_offset_seconds": rng.choice((90.0, 600.0, 3600.0)),
        "processing_concurrency": rng.choice((1, 2, 4)),
        "queue_seconds": rng.choice((0.1, 0.25)),  # 200 items at 1 a time: 50 s at most, inside every bound
    }
    return chosen, params


def describe_variants(variants: Sequence[str], params: dict[str, float]) -> str:
    """The variants of a seed for its log line, with the parameters that apply."""
    if not variants:
        return "none"
    shown = list(variants)
    extra = {
        "endpoint-expiry": f"ttl {params['endpoint_ttl_seconds']:g} s",
        "list-lag": f"lag {params['list_lag_seconds']:g} s",
        "clock-ahead": f"{params['clock_offset_seconds']:g} s",
        "clock-behind": f"{params['clock_offset_seconds']:g} s",
        "processing-queue": f"{params['processing_concurrency']:g} at once, {params['queue_seconds']:g} s",
    }
    return ",".join(f"{v} ({extra[v]})" if v in extra else v for v in shown)


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
    webhooks: bool = False  #: the webhook faults of the seed too (webhook_rules)
    rng: random.Random = field(init=False)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    applied: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.rules = base_rules(self.rng) + (webhook_rules(self.seed) if self.webhooks else [])

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


# -- kill -9 -------------------------------------------------------------------------------------------


def journal_rows(ledger: Path, *kinds: str) -> int:
    """Journal rows of these kinds written so far, read-only (0 while the ledger does not exist yet)."""
    if not ledger.exists():
        return 0
    marks = ", ".join("?" * len(kinds))
    try:
        with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute(f"SELECT count(*) FROM events WHERE kind IN ({marks})", kinds).fetchone()
            return int(row[0])
    except sqlite3.Error:
        return 0


def run_and_kill(
    cmd: list[str], env: dict[str, str], progress: Callable[[], int], target: int, delay: float
) -> str:
    """Start a command; SIGKILL it once progress() reaches target or after delay seconds. How it ended."""
    before = progress()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    try:
        while proc.poll() is None:
            if progress() >= target or time.monotonic() - started >= delay:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                return f"killed after {progress() - before} journal rows"
            time.sleep(0.02)
        return f"ended by itself with {proc.returncode}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
