"""A careful user's migration script, written from the spec: threads up to the limits, lookups, backoff.

Each worker sends one file in one POST /v2/video, then GETs /v1/videos/:id every 5 s (the spec's "at most
once per 5 seconds") until the video is done, error or aborted. A 429 waits at least 5 s (the spec) and
backs off exponentially from there; a 5xx, a network error or a timeout backs off exponentially (1 s, 2 s,
4 s, ... with jitter), five attempts in all per request. A POST whose answer did not come (a timeout, a cut
connection, a 5xx: the service may have made the video) is not sent again blind: as the spec says, the video
is looked up first through the list filtered by project and title, and only sent again when the list does
not show it. The pool has as many threads as the limits let the script use (`workers_for`). No videoferry
code.

Run it alone: VIDEOFERRY_API_URL=... VIDEOFERRY_UPLOAD_URL=... VIDEOFERRY_TOKEN=... \\
    python -m bench.careful PARENT_ID FILE...
"""

from __future__ import annotations

import math
import os
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

TERMINAL = ("done", "error", "aborted")
ATTEMPTS = 5
#: A request refused this many times in a row is given up (a safety net; a 429 is normally brief).
MAX_429 = 100
#: The published limits (spec: 10 per second, 300 per minute) and the calls a file takes at the least (its
#: POST and one status GET 5 s later, with the 2 s processing of the emulator's default).
PER_SECOND, PER_MINUTE, CALLS_PER_FILE = 10, 300, 2


def workers_for(per_second: int = PER_SECOND, per_minute: int = PER_MINUTE, poll: float = 5.0) -> int:
    """As many threads as the limits can keep busy: a thread holds a file for at least one poll interval and
    makes CALLS_PER_FILE calls in it, so the sustained rate (the tighter of per second and per minute / 60)
    needs rate x poll / calls threads (13 at the published limits). More would only meet 429s."""
    sustained = min(float(per_second), per_minute / 60.0)
    return max(1, math.ceil(sustained * poll / CALLS_PER_FILE))


@dataclass(frozen=True)
class Timing:
    """The script's waits: between polls, the least wait after a 429 (spec: 5 s), the first backoff after a
    failure (doubling each attempt, capped), the HTTP timeout."""

    poll: float = 5.0
    pause_429: float = 5.0
    retry_pause: float = 1.0
    max_pause: float = 30.0
    timeout: float = 60.0

    def backoff(self, first: float, attempt: int) -> float:
        """first x 2^(attempt-1), capped at max_pause, up to 20 % jitter (threads never retry in step)."""
        return min(self.max_pause, first * 2 ** max(0, attempt - 1)) * (1.0 + 0.2 * random.random())


@dataclass
class Outcome:
    """What happened to one file: its last known status (or `failed`), the requests it took, why it failed."""

    file: str
    status: str = "failed"
    video_id: str | None = None
    posts: int = 0
    gets: int = 0
    lookups: int = 0
    found: int = 0
    refused: int = 0
    retries: int = 0
    error: str = ""


class GaveUp(Exception):
    """A request failed five times (or was refused MAX_429 times, or answered a 4xx)."""


class NoAnswer(Exception):
    """A POST that may have made the video: no answer, or a 5xx (look it up before sending it again)."""


def _send(
    send: Callable[[], httpx.Response], outcome: Outcome, timing: Timing, *, once: bool = False
) -> httpx.Response:
    """One request by the script's rules: 429 -> wait 5 s and more each time; 5xx/network/timeout -> back off,
    up to 5 attempts (once: raise NoAnswer at the first of those instead, for the caller to look up)."""
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
                time.sleep(timing.backoff(timing.pause_429, refusals))
                continue
            if response.status_code < 500:
                if response.is_error:
                    raise GaveUp(f"HTTP {response.status_code}")
                return response
            problem = f"HTTP {response.status_code}"
        if once:
            raise NoAnswer(problem)
        attempts += 1
        if attempts >= ATTEMPTS:
            raise GaveUp(f"{attempts} attempts, last {problem}")
        outcome.retries += 1
        time.sleep(timing.backoff(timing.retry_pause, attempts))


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

    def lookup() -> str | None:
        """The video of this file if the list (filtered by project and title, newest first) shows one."""
        outcome.lookups += 1
        params: dict[str, str | int] = {
            "project_id": parent_id,
            "title": path.stem,
            "order": "created_at.desc",
            "page": 1,
        }
        answer = _send(lambda: http.get(f"{api_url}/v1/videos", params=params, headers=auth), outcome, timing)
        for video in answer.json().get("data") or []:
            if video.get("title") == path.stem:
                outcome.found += 1
                return str(video["id"])
        return None

    try:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                outcome.video_id = str(_send(post, outcome, timing, once=True).json()["data"]["id"])
                break
            except NoAnswer as exc:
                if attempt == ATTEMPTS:
                    raise GaveUp(f"{attempt} attempts, last {exc}") from None
                outcome.retries += 1
                time.sleep(timing.backoff(timing.retry_pause, attempt))
                found = lookup()
                if found is not None:
                    outcome.video_id = found
                    break
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
    workers: int | None = None,
    verbose: bool = False,
) -> list[Outcome]:
    """Migrate the files on a pool of `workers` threads (default workers_for the published limits); one
    outcome per file, in the files' order."""
    timing = timing or Timing()
    workers = workers or workers_for(poll=timing.poll)
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
