"""A platform source in a migration: its videos deleted at the source since an earlier run reported, and
each video's download link resolved when its create is due (what a platform failure means for the item,
failed with the reason, or for the run, stopped and resumable)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from videoferry.connectors.config import ConfigError
from videoferry.connectors.platforms.base import (
    DownloadLink,
    NotFoundError,
    PlatformConfigError,
    PlatformError,
    PlatformUnavailable,
    StillProcessing,
)
from videoferry.connectors.platforms.link_source import LinkSource
from videoferry.connectors.platforms.links import platform_video
from videoferry.connectors.platforms.origins import Origin
from videoferry.connectors.sources import SourceError
from videoferry.core.platform_keys import player_ids_note
from videoferry.state.models import Item
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.item_failure import fail_item
from videoferry.tasks.migrate.plan import Plan, gone_from_source
from videoferry.tasks.migrate.report import ORIGIN_NOTE
from videoferry.tasks.stop import ServiceUnavailable

T = TypeVar("T")


#: How many keys the warning about videos gone from the source names.
NAMED_GONE = 10


def prepare_platform_source(ctx: MigrateContext, plan: Plan) -> None:
    """Before the transfers: where each item came from, for the notes its create journals; the items no
    longer listed at the source named (a warning of the run, a warning journalled on each, never dropped)."""
    ctx.platforms.origins = plan.inventory.origins
    gone = gone_from_source(plan, ctx.ledger)
    if not gone:
        return
    source = plan.inventory.uri.strip()
    for key in gone:
        ctx.ledger.note(
            key,
            ctx.run_id,
            f"no longer listed at {source} (deleted at the source since): its video here is kept",
            kind="warning",
        )
    named = ", ".join(gone[:NAMED_GONE]) + (", ..." if len(gone) > NAMED_GONE else "")
    plan.inventory.warnings.append(
        f"{len(gone)} videos migrated earlier are no longer listed at {source} (deleted at the source"
        f" since; their videos here are kept): {named}"
    )


def resolve_link(ctx: MigrateContext, item: Item) -> DownloadLink | None:
    """The item's download link now (a URL import's create); None when there is none (the item failed
    saying why, or the run was stopped and the item stays as it is). The link is a secret: only its
    describe() is journalled, with where the item came from."""
    link = _resolved(ctx, item, ctx.platforms.resolve)
    if link is not None:
        _journal(ctx, item, link)
    return link


def open_link_source(ctx: MigrateContext, item: Item) -> LinkSource | None:
    """The item's file read through a link resolved now (`--via tus`: its create, or its upload resumed
    from the server's offset); None as resolve_link()."""
    source = _resolved(ctx, item, ctx.platforms.open_file)
    if source is not None:
        _journal(ctx, item, source.link)
    return source


def _resolved(ctx: MigrateContext, item: Item, resolve: Callable[[str], T]) -> T | None:
    platform, video_id = platform_video(item.spec.source)
    try:
        return resolve(item.spec.source)
    except PlatformConfigError as exc:  # the token or plan: every item would fail the same way (exit 2)
        ctx.stop(ConfigError(str(exc)))
    except PlatformUnavailable as exc:  # the source is gone for now: stop as a target outage does
        ctx.stop(ServiceUnavailable(f"{exc}; the items not sent yet stay as they are: rerun to resume"))
    except StillProcessing as exc:  # failed for this run only: every run plans a failed item again
        fail_item(ctx, item, "source_processing", f"{exc}: a later run takes it")
    except NotFoundError:
        fail_item(ctx, item, "source_gone", f"{platform} video {video_id} was deleted at the source")
    except PlatformError as exc:  # no download link (downloads off), a malformed answer
        fail_item(ctx, item, "source", str(exc))
    except SourceError as exc:  # the file host did not tell the file's size
        fail_item(ctx, item, "source", str(exc))
    return None


def journal_file_origin(ctx: MigrateContext, item: Item) -> None:
    """Before the create of an item whose bytes are a file listed from a platform (a YouTube Takeout's):
    where it came from, journalled as a platform video's is (the report's source_file column)."""
    origin = ctx.platforms.origins.get(item.key)
    if origin is None:
        return
    name = item.spec.source.rsplit("/", 1)[-1]
    platform = item.key.split(":", 1)[0]
    ctx.ledger.note(item.key, ctx.run_id, f"{ORIGIN_NOTE}{platform}: the file {name}{_came(origin)}")


def _journal(ctx: MigrateContext, item: Item, link: DownloadLink) -> None:
    platform, _ = platform_video(item.spec.source)
    origin = ctx.platforms.origins.get(item.key)
    came = _came(origin) if origin is not None else ""
    ctx.ledger.note(item.key, ctx.run_id, f"{ORIGIN_NOTE}{platform}: the {link.describe()}{came}")
    if origin is not None and origin.player_ids:  # what `links` and `rewrite-embeds` map its embeds by
        ctx.ledger.note(item.key, ctx.run_id, player_ids_note(origin.player_ids))


def _came(origin: Origin) -> str:
    return (
        f"; source page {origin.url or '-'}, created {origin.created or '-'}, folder {origin.folder or '-'}"
    )
