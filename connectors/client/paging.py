"""When a walk over a paged list ends: the page size, `total` if sent, a short, empty or repeated page."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from connectors.models import Video, VideoPage

__all__ = ["walk_pages"]

log = logging.getLogger(__name__)


def walk_pages(fetch: Callable[[int], VideoPage], operation: str) -> Iterator[list[Video]]:
    """Every non-empty page fetch(1), fetch(2), ... in order, until an empty or short page (or the total).

    The page size is the server's (it may cap per_page): `pagination.per_page`, else the number of items
    sent. A page that brings no video not seen before ends the walk (a server ignoring `page` would
    otherwise answer page 1 for ever).
    """
    seen: set[str] = set()
    page = 1
    while True:
        result = fetch(page)
        items = result.items
        if not items:
            return
        fresh = {video.id for video in items} - seen
        if page > 1 and not fresh:
            log.warning("%s: page %d repeats videos already listed; ending the walk", operation, page)
            return
        seen |= fresh
        yield items
        size = result.pagination.per_page or len(items)
        total = result.pagination.total
        if total is not None:
            if (page - 1) * size + len(items) >= total:
                return
        elif len(items) < size:
            return
        page += 1
