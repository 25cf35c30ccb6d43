"""Paginated lists: integer query parameters, page / per_page, `order`, one page of rows, the meta."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from videoferry.emulator.errors import bad_order, internal, not_integer, out_of_range

if TYPE_CHECKING:
    from videoferry.emulator.app import Ctx

DEFAULT_PER_PAGE = 25
MAX_PER_PAGE = 100
T = TypeVar("T")


class Dated(Protocol):
    """A record with a creation time and an optional last update."""

    @property
    def created_at(self) -> datetime: ...  # noqa: D102

    @property
    def updated_at(self) -> datetime | None: ...  # noqa: D102


def query_int(ctx: Ctx, name: str, default: int, low: int | None = None, high: int | None = None) -> int:
    """An integer query parameter (400400 `number`), within low..high when given (400400 `range`)."""
    raw = ctx.request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise not_integer(name) from None
    if low is not None and high is not None and not low <= value <= high:
        raise out_of_range(name, low, high)
    return value


def per_page_of(ctx: Ctx) -> tuple[int, int]:
    """page (unchecked) and per_page (1..100, default 25), in that order of checks."""
    page = query_int(ctx, "page", 1)
    return page, query_int(ctx, "per_page", DEFAULT_PER_PAGE, 1, MAX_PER_PAGE)


def check_page(page: int) -> None:
    """A page below 1 is 500 / 500500, as the service answers it."""
    if page < 1:
        raise internal()


def paging(ctx: Ctx) -> tuple[int, int]:
    """page (from 1) and per_page (1..100, default 25) of a paginated list."""
    page, per_page = per_page_of(ctx)
    check_page(page)
    return page, per_page


def order_of(ctx: Ctx, fields: Sequence[str], default: str) -> tuple[str, str]:
    """`order` as <field>.<asc|desc> (400216 otherwise)."""
    order = ctx.request.query_params.get("order") or default
    field, dot, direction = order.partition(".")
    if not dot or field not in fields or direction not in ("asc", "desc"):
        raise bad_order(order)
    return field, direction


def page_rows(rows: list[T], page: int, per_page: int) -> list[T]:
    """The rows of one page (pages count from 1)."""
    start = (page - 1) * per_page
    return rows[start : start + per_page]


def by_update(item: Dated) -> tuple[bool, datetime]:
    """Sort key of `updated_at` ordering: never-updated records lowest, then by the last change."""
    return item.updated_at is not None, item.updated_at or item.created_at


def listing(
    total: int, page: int, per_page: int, field: str, direction: str, data: list[Any]
) -> dict[str, Any]:
    """{meta: {pagination, order}, data}."""
    meta = {
        "pagination": {"page": page, "per_page": per_page, "total": total},
        "order": {field: direction},
    }
    return {"meta": meta, "data": data}
