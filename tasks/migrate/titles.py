"""The title an item's create is sent under: one a lookup tells from any other item's, ASCII in headers."""

from __future__ import annotations

from connectors.titles import header_safe_title, placeholder_title
from core.item import Via, default_title
from state.models import Item
from tasks.lookup import is_shared, shared_titles
from tasks.migrate.context import MigrateContext


def item_title_groups(ctx: MigrateContext) -> frozenset[tuple[str, str]]:
    """(parent, title_group_key) pairs more than one item of the ledger falls in (tasks/lookup.shared_titles):
    learned once per run."""
    with ctx.lock:
        if ctx.shared_titles is None:
            rows = ctx.ledger.title_rows()
            titles = ((parent, title or default_title(source, key)) for key, parent, title, source in rows)
            ctx.shared_titles = shared_titles(titles)
        return ctx.shared_titles


def create_title(ctx: MigrateContext, item: Item, mode: Via) -> str:
    """The title the create sends: one a lookup can tell from every other item's in its parent, and ASCII in
    headers.

    Items whose titles a tidying service could make alike (equal once tidied, or in their first
    core.tidy.MIN_TITLE_CAP characters: tasks/lookup.shared_titles) get a marker derived from their key (set
    to the real title by the finish step), so a lost create answer can only ever match its own item's video.
    Header uploads send titles that are not plain ASCII as the same marker.
    """
    title = item.spec.title
    if is_shared(item_title_groups(ctx), item.spec.parent_id, title):
        return placeholder_title(item.key)
    if mode is not Via.TUS:
        return header_safe_title(title, item.key)[0]
    return title
