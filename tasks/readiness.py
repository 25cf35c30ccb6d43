"""Readiness: learn many videos' statuses per list call (or by webhook) and move items to done/error."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from datetime import datetime
from typing import Literal

from connectors.errors import NotFoundError
from connectors.webhook import WebhookReceiver
from state.machine import PROCESSING, UPLOADED
from state.models import Item
from tasks.context import RunContext
from tasks.transfer import CLOCK_SKEW

log = logging.getLogger(__name__)

#: The list's page size: one call covers up to this many videos.
PAGE_SIZE = 100
#: Items the service reports on after their upload is complete.
WATCH_STATES = (UPLOADED, PROCESSING)

Scope = Literal["project_id", "folder_id"]


class Watcher:
    """Polls the destination lists at most once per poll interval and records terminal statuses."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.scopes: dict[str, Scope | None] = {}
        self.polls = 0
        self.list_calls = 0
        self.last_poll = 0.0

    def watched(self) -> list[Item]:
        """Items whose upload is complete and whose video is not yet terminal."""
        return [i for i in self.ctx.ledger.items(WATCH_STATES) if i.video_id]

    def poll_once(self) -> list[tuple[str, str, str]]:
        """One round: list each destination (newest first) until every watched video is seen."""
        items = self.watched()
        self.polls += 1
        self.last_poll = time.monotonic()
        by_parent: dict[str, dict[str, Item]] = defaultdict(dict)
        for item in items:
            by_parent[item.parent_id or ""][item.video_id or ""] = item
        statuses: dict[str, str] = {}
        missing: list[Item] = []
        for parent, wanted in by_parent.items():
            intents = [i.created_intent_at for i in wanted.values() if i.created_intent_at is not None]
            oldest = min(intents) - CLOCK_SKEW if intents else None
            found = self._list_parent(parent, set(wanted), oldest)
            statuses.update(found)
            missing.extend(item for vid, item in wanted.items() if vid not in found)
        changed = (
            self.ctx.ledger.apply_statuses(self.ctx.run_id, statuses, failure_messages(statuses))
            if statuses
            else []
        )
        for item in missing:
            changed.extend(self._get_one(item))
        return changed

    def _list_parent(self, parent: str, wanted: set[str], oldest: datetime | None) -> dict[str, str]:
        if not parent:
            return self._list_scope(None, parent, wanted, oldest)
        scope = self.scopes.get(parent)
        if scope is None:
            scope = self._scope_of(parent, next(iter(sorted(wanted))))
            self.scopes[parent] = scope
        return self._list_scope(scope, parent, wanted, oldest)

    def _scope_of(self, parent: str, video_id: str) -> Scope:
        """Whether a parent id is a folder or a project, learned once from one of its videos."""
        try:
            video = self.ctx.client.get_video(video_id)
        except NotFoundError:
            return "project_id"  # that video is gone; _get_one reports it
        return "folder_id" if video.folder_id == parent and video.project_id != parent else "project_id"

    def _list_scope(
        self, scope: Scope | None, parent: str, wanted: set[str], oldest: datetime | None
    ) -> dict[str, str]:
        """Page newest-first until every wanted video is seen or the pages are older than our creates."""
        found: dict[str, str] = {}
        page = 1
        while True:
            filters = {scope: parent} if scope else {}
            result = self.ctx.client.list_videos(
                order="created_at.desc", page=page, per_page=PAGE_SIZE, **filters
            )
            self.list_calls += 1
            for video in result.items:
                if video.id in wanted and video.status:
                    found[video.id] = video.status
            total = result.pagination.total or 0
            if len(found) == len(wanted) or not result.items or page * PAGE_SIZE >= total:
                return found
            last = result.items[-1].created_at
            if oldest is not None and last is not None and last < oldest:
                return found  # older than every create of ours: the rest are not in this listing
            page += 1

    def _get_one(self, item: Item) -> list[tuple[str, str, str]]:
        """Fallback for a video no list showed: one GET (still at most one per video per poll)."""
        assert item.video_id is not None
        try:
            video = self.ctx.client.get_video(item.video_id)
        except NotFoundError as exc:
            self.ctx.ledger.fail(item.key, self.ctx.run_id, exc.code or 400404, "video vanished (404)")
            return [(item.key, item.state, "failed")]
        if not video.status:
            return []
        found = {video.id: video.status}
        return self.ctx.ledger.apply_statuses(self.ctx.run_id, found, failure_messages(found))


def failure_messages(statuses: dict[str, str]) -> dict[str, str]:
    """A reason for every video found in error/aborted (lists and gets carry none; webhooks do)."""
    return {
        vid: f"the service ended the video in status {status} (its reason comes only by webhook)"
        for vid, status in statuses.items()
        if status in ("error", "aborted")
    }


def apply_webhook(ctx: RunContext, video_id: str, status: str, message: str | None) -> None:
    """Record one media.update.status event (videos not in this ledger are ignored)."""
    found = {video_id: status}
    ctx.ledger.apply_statuses(ctx.run_id, found, {video_id: message} if message else failure_messages(found))


def start_webhooks(
    ctx: RunContext, listen: str, username: str | None = None, password: str | None = None
) -> WebhookReceiver:
    """Start the webhook receiver on HOST:PORT; events update the ledger as they arrive."""
    host, _, port = listen.rpartition(":")
    receiver = WebhookReceiver(
        host or "127.0.0.1",
        int(port),
        username=username,
        password=password,
        on_event=lambda vid, status, message: apply_webhook(ctx, vid, status, message),
    )
    receiver.start()
    return receiver
