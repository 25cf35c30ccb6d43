"""A platform video's download link, resolved when its item's create is due: what each platform failure
means for the item (failed with the reason) or the run (stopped, resumable)."""

from __future__ import annotations

import logging

from connectors.config import ConfigError
from connectors.platforms.base import (
    DownloadLink,
    NotFoundError,
    PlatformConfigError,
    PlatformError,
    PlatformUnavailable,
)
from connectors.platforms.links import platform_video
from state.models import Item
from tasks.migrate.context import MigrateContext
from tasks.migrate.reconcile import fail_item
from tasks.stop import ServiceUnavailable

log = logging.getLogger(__name__)


def resolve_link(ctx: MigrateContext, item: Item) -> DownloadLink | None:
    """The item's download link now; None when there is none (the item failed saying why, or the run was
    stopped and the item stays planned). The link itself is a secret: only its describe() is journalled."""
    platform, video_id = platform_video(item.spec.source)
    try:
        link = ctx.platforms.resolve(item.spec.source)
    except PlatformConfigError as exc:  # the token or plan: every item would fail the same way (exit 2)
        ctx.stop(ConfigError(str(exc)))
        return None
    except PlatformUnavailable as exc:  # the source is gone for now: stop as a target outage does
        ctx.stop(ServiceUnavailable(f"{exc}; the items not created yet stay planned: rerun to resume"))
        return None
    except NotFoundError:
        fail_item(ctx, item, "source_gone", f"{platform} video {video_id} was deleted at the source")
        return None
    except PlatformError as exc:  # no download link (downloads off, still transcoding), a malformed answer
        fail_item(ctx, item, "source", str(exc))
        return None
    ctx.ledger.note(item.key, ctx.run_id, f"bytes from {platform}: the {link.describe()}")
    return link
