"""When a walk over a paged list ends: the page size, `total` if sent, a short, empty or repeated page."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Protocol, TypeVar

__all__ = ["walk_items", "walk_pages"]

log = logging.getLogger(__name__)

M = TypeVar("M")
M_co = TypeVar("M_co", covariant=True)


class _Pagination(Protocol):
    @property
    def per_page(self) -> int | None: ...

    @property
    def total(self) -> int | None: ...


class PageLike(Protocol[M_co]):
    """A page of any list: its items and meta.pagination."""

    @property
    def items(self) -> Sequence[M_co]: ...

    @property
    def pagination(self) -> _Pagination: ...


def walk_pages(
    fetch: Callable[[int], PageLike[M]], key: Callable[[M], Hashable], operation: str
) -> Iterator[list[M]]:
    """The items not seen before of every page fetch(1), fetch(2), ..., page by page.

    A walk ends on an empty page, when meta.pagination.total is reached, or (without a total) on a page
    shorter than the server's page size (pagination.per_page, else the first page's length: a server may
    cap per_page). A page that brings nothing new ends it too: a server ignoring the page number cannot
    make it endless.
    """
    seen: set[Hashable] = set()
    number = 1
    size: int | None = None
    while True:
        page = fetch(number)
        items = list(page.items)
        if not items:
            return
        fresh = [item for item in items if key(item) not in seen]
        if number > 1 and not fresh:
            log.warning("%s: page %d repeats what was listed; ending the walk", operation, number)
            return
        seen.update(key(item) for item in fresh)
        yield fresh
        size = page.pagination.per_page or size or len(items)
        total = page.pagination.total
        if total is not None:
            if (number - 1) * size + len(items) >= total:
                return
        elif len(items) < size:
            return
        number += 1


def walk_items(
    fetch: Callable[[int], PageLike[M]], key: Callable[[M], Hashable], operation: str
) -> Iterator[M]:
    """Every item of every page, each once (walk_pages says when the walk ends)."""
    for page in walk_pages(fetch, key, operation):
        yield from page
