"""The naive migration script a user would write: upload one file, poll it every 5 s until it ends, next.

Run it alone: VIDEOFERRY_API_URL=... VIDEOFERRY_UPLOAD_URL=... VIDEOFERRY_TOKEN=... \\
    python -m bench.naive PARENT_ID FILE...
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import httpx

TERMINAL = ("done", "error", "aborted")


def migrate(
    files: list[Path],
    api_url: str,
    upload_url: str,
    token: str,
    parent_id: str,
    poll_every: float = 5.0,
    verbose: bool = False,
) -> dict[str, str]:
    """Upload each file with one POST /v2/video, then GET it every poll_every seconds until it is done."""
    auth = {"Authorization": f"Bearer {token}"}
    results = {}
    with httpx.Client(timeout=60.0) as http:
        for path in files:
            response = http.post(
                f"{upload_url}/v2/video",
                content=path.read_bytes(),
                headers={
                    **auth,
                    "X-Parent-ID": parent_id,
                    "X-Video-Title": path.stem,
                    "X-File-Name": path.name,
                    "Content-Type": "video/mp4",
                },
            )
            response.raise_for_status()
            video_id = response.json()["data"]["id"]
            while True:
                time.sleep(poll_every)
                video = http.get(f"{api_url}/v1/videos/{video_id}", headers=auth)
                video.raise_for_status()
                status = video.json()["data"]["status"]
                if status in TERMINAL:
                    break
            results[path.name] = status
            if verbose:
                print(f"{path.name}: {status}", flush=True)
    return results


def main() -> None:
    """Migrate the files named on the command line into PARENT_ID."""
    parent_id, *names = sys.argv[1:]
    migrate(
        [Path(n) for n in names],
        os.environ["VIDEOFERRY_API_URL"],
        os.environ["VIDEOFERRY_UPLOAD_URL"],
        os.environ["VIDEOFERRY_TOKEN"],
        parent_id,
        verbose=True,
    )


if __name__ == "__main__":
    main()
