"""The measured process of `platform_listing`: `python -m bench.platform_child` lists a Vimeo account (no
chapters) as one job read from stdin and prints its peak RSS (bench.child's measure(module=...) runs it).

Jobs (JSON on stdin, with "base_url" and "token"): {"job": "stream"}: the listing alone, each video handed
on and dropped (connectors/platforms/listing.stream_source); {"job": "rows"}: the listing made into the rows
and origins the plan reads (connectors/platforms/source_rows.source_rows). The last stdout line is JSON:
peak_rss and baseline_rss (after imports) in bytes, seconds, videos, calls.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from bench.child import _peak_rss, _rss_now
from videoferry.connectors.platforms.listing import Listing, parse_platform_source, stream_source
from videoferry.connectors.platforms.source_rows import source_rows
from videoferry.connectors.platforms.vimeo import VimeoClient


def _stream(spec: dict[str, Any]) -> dict[str, Any]:
    source = parse_platform_source("vimeo:")
    listing = Listing(source)
    videos = 0
    with VimeoClient(spec["base_url"], spec["token"]) as client:
        for _video in stream_source(source, client, listing, chapters=False):
            videos += 1
    return {"videos": videos, "calls": listing.calls}


def _rows(spec: dict[str, Any]) -> dict[str, Any]:
    env = {"VIDEOFERRY_VIMEO_API_URL": spec["base_url"], "VIDEOFERRY_VIMEO_TOKEN": spec["token"]}
    listed = source_rows("vimeo:", {}, env, chapters=False)
    return {"videos": listed.frame().height, "origins": len(listed.origins), "calls": listed.calls}


JOBS = {"stream": _stream, "rows": _rows}


def main() -> None:
    """Run the job from stdin and print the JSON result as the last line."""
    logging.basicConfig(level=logging.ERROR)
    spec = json.loads(sys.stdin.read())
    baseline = _rss_now()
    started = time.perf_counter()
    result = JOBS[spec["job"]](spec)
    result.update(baseline_rss=baseline, seconds=time.perf_counter() - started, peak_rss=_peak_rss())
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
