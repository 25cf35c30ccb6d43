"""A careful user's migration script: 4 threads, each uploads a file and polls it until it ends; retries.

Each worker sends one file in one POST /v2/video, then GETs /v1/videos/:id every 5 s until the video is done,
error or aborted. A 429 pauses that worker 5 s and repeats the request; a 5xx, a network error or a timeout
is tried again, five attempts in all per request (the POST too: an upload whose answer was lost is sent
again, which is how such a script makes duplicates). No videoferry code.

Run it alone: VIDEOFERRY_API_URL=... VIDEOFERRY_UPLOAD_URL=... VIDEOFERRY_TOKEN=... \\
    python -m bench.careful PARENT_ID FILE...
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

TERMINAL = ("done", "error", "aborted")
WORKERS = 4
ATTEMPTS = 5
#: A request refused this many times in a row is given up (a safety net; a 429 is normally brief).
MAX_429 = 100


@dataclass(frozen=True)
class Timing:
    """The script's waits: between polls, after a 429, before another attempt; the HTTP timeout."""

    poll: float = 5.0
    pause_429: float = 5.0
    retry_pause: float = 1.0
    timeout: float = 60.0


@dataclass
class Outcome:
    """What happened to one file: its last known status (or `failed`), the requests it took, why it failed."""

    file: str
    status: str = "failed"
    video_id: str | None = None
    posts: int = 0
    gets: int = 0
    refused: int = 0
    retries: int = 0
    error: str = ""


class GaveUp(Exception):
    """A request failed five times (or was refused MAX_429 times, or answered a 4xx)."""


def _send(send: Callable[[], httpx.Response], outcome: Outcome, timing: Timing) -> httpx.Response:
    """One request by the script's rules: 429 -> pause, repeat; 5xx/network/timeout -> up to 5 attempts."""
    attempts = refusals = 0
    while True:
        try:
            response = send()
        except httpx.TransportError as exc:  # connection refused/dropped, timeouts, a cut answer
            problem = f"{type(exc).__name__}"
        else:
            if response.status_code == 429:
                outcome.refused += 1
                refusals += 1
                if refusals >= MAX_429:
                    raise GaveUp(f"{refusals} x 429")
                time.sleep(timing.pause_429)
                continue
            if response.status_code < 500:
                if response.is_error:
                    raise GaveUp(f"HTTP {response.status_code}")
                return response
            problem = f"HTTP {response.status_code}"
        attempts += 1
        if attempts >= ATTEMPTS:
            raise GaveUp(f"{attempts} attempts, last {problem}")
        outcome.retries += 1
        time.sleep(timing.retry_pause)


def migrate_one(
    http: httpx.Client, path: Path, api_url: str, upload_url: str, token: str, parent_id: str, timing: Timing
) -> Outcome:
    """Upload one file, then poll its video until it ends; never raises (the outcome says what happened)."""
    auth = {"Authorization": f"Bearer {token}"}
    outcome = Outcome(path.name)
    data = path.read_bytes()
    headers = {
        **auth,
        "X-Parent-ID": parent_id,
        "X-Video-Title": path.stem,
        "X-File-Name": path.name,
        "Content-Type": "video/mp4",
    }

    def post() -> httpx.Response:
        outcome.posts += 1
        return http.post(f"{upload_url}/v2/video", content=data, headers=headers)

    def get() -> httpx.Response:
        outcome.gets += 1
        return http.get(f"{api_url}/v1/videos/{outcome.video_id}", headers=auth)

    try:
        outcome.video_id = str(_send(post, outcome, timing).json()["data"]["id"])
        while True:
            time.sleep(timing.poll)
            status = str(_send(get, outcome, timing).json()["data"]["status"])
            if status in TERMINAL:
                outcome.status = status
                return outcome
    except (GaveUp, ValueError, KeyError) as exc:
        outcome.error = str(exc) or type(exc).__name__
        return outcome


def migrate(
    files: list[Path],
    api_url: str,
    upload_url: str,
    token: str,
    parent_id: str,
    timing: Timing | None = None,
    workers: int = WORKERS,
    verbose: bool = False,
) -> list[Outcome]:
    """Migrate the files on a pool of `workers` threads; one outcome per file, in the files' order."""
    timing = timing or Timing()
    limits = httpx.Limits(max_connections=workers * 2, max_keepalive_connections=workers * 2)
    with (
        httpx.Client(timeout=timing.timeout, limits=limits) as http,
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="careful") as pool,
    ):

        def one(path: Path) -> Outcome:
            outcome = migrate_one(http, path, api_url, upload_url, token, parent_id, timing)
            if verbose:
                print(f"{outcome.file}: {outcome.status} {outcome.error}".rstrip(), flush=True)
            return outcome

        return list(pool.map(one, files))


def main() -> None:
    """Migrate the files named on the command line into PARENT_ID; exit 1 when any did not end done."""
    parent_id, *names = sys.argv[1:]
    outcomes = migrate(
        [Path(n) for n in names],
        os.environ["VIDEOFERRY_API_URL"],
        os.environ["VIDEOFERRY_UPLOAD_URL"],
        os.environ["VIDEOFERRY_TOKEN"],
        parent_id,
        verbose=True,
    )
    done = sum(1 for o in outcomes if o.status == "done")
    print(f"{done} of {len(outcomes)} done", flush=True)
    sys.exit(0 if done == len(outcomes) else 1)


if __name__ == "__main__":
    main()
