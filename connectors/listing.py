"""The videos list: one page, every page, and a newest-first scan that checks every filter it sent."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from connectors.errors import NotFoundError, ResponseFormatError
from connectors.ids import same_id
from connectors.models import Video, VideoPage
from connectors.retry import CallKind
from connectors.transport import ApiTransport

__all__ = ["ListingCalls"]

log = logging.getLogger(__name__)


class ListingCalls(ApiTransport):
    """GET /v1/videos and the walks over it (spec 4.1; parameter names and page bounds are not shown).

    Pages end by the server's own page size (`pagination.per_page`, else the number of items it sent), not
    by a `total` the server may leave out; a server that repeats a page does not make a walk endless.
    """

    def list_videos(
        self,
        *,
        project_id: str | None = None,
        folder_id: str | None = None,
        title: str | None = None,
        order: str | None = None,
        page: int = 1,
        per_page: int = 100,
    ) -> VideoPage:
        """GET /v1/videos: one page (page from 1, per_page 1..100), filtered, order "<field>.<asc|desc>"."""
        params: dict[str, Any] = {"page": page, "per_page": per_page}
        for name, value in (
            ("project_id", project_id),
            ("folder_id", folder_id),
            ("title", title),
            ("order", order),
        ):
            if value is not None:
                params[name] = value
        body = self._call(
            "GET", "/v1/videos", operation="list_videos", kind=CallKind.IDEMPOTENT, params=params
        )
        if not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise ResponseFormatError("list answer has no data array", operation="list_videos")
        meta = body.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        try:
            return VideoPage.model_validate(
                {
                    "items": body["data"],
                    "pagination": meta.get("pagination") or {},
                    "order": meta.get("order") or {},
                }
            )
        except Exception as exc:
            raise ResponseFormatError(
                f"list answer malformed ({type(exc).__name__})", operation="list_videos"
            ) from None

    def _pages(
        self,
        *,
        project_id: str | None,
        folder_id: str | None,
        title: str | None,
        order: str | None,
        per_page: int,
    ) -> Iterator[list[Video]]:
        """Every non-empty page, in order, until an empty or short page (or the total, when sent, is reached).

        The page size is the server's (it may cap per_page). A page that brings no video not seen before
        ends the walk (a server ignoring `page` would otherwise answer page 1 for ever).
        """
        seen: set[str] = set()
        page = 1
        while True:
            result = self.list_videos(
                project_id=project_id,
                folder_id=folder_id,
                title=title,
                order=order,
                page=page,
                per_page=per_page,
            )
            items = result.items
            if not items:
                return
            fresh = {video.id for video in items} - seen
            if page > 1 and not fresh:
                log.warning("list_videos: page %d repeats videos already listed; ending the walk", page)
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

    def iter_videos(
        self,
        *,
        project_id: str | None = None,
        folder_id: str | None = None,
        title: str | None = None,
        order: str | None = None,
        per_page: int = 100,
    ) -> Iterator[Video]:
        """Every matching video, page by page (one API call per page); a video seen twice is yielded once.

        The filters are the server's (use scan_videos for filters checked here too).
        """
        seen: set[str] = set()
        for items in self._pages(
            project_id=project_id, folder_id=folder_id, title=title, order=order, per_page=per_page
        ):
            for video in items:
                if video.id not in seen:
                    seen.add(video.id)
                    yield video

    def scan_videos(
        self,
        *,
        project_id: str | None = None,
        folder_id: str | None = None,
        title: str | None = None,
        newer_than: datetime | None = None,
        per_page: int = 100,
    ) -> Iterator[Video]:
        """Videos newest first (order=created_at.desc), every filter checked here too, down to `newer_than`.

        A service may ignore a filter (the spec names none), so what comes back is verified locally: exact
        title, project_id / folder_id in any id notation (a video whose answer leaves the field out is read
        once with GET). `newer_than` is a time on the SERVICE's clock (see ServiceClock.to_service; a naive
        datetime is taken as UTC): videos created before it are skipped, and the scan stops after the first
        page whose last video was created before it, unless the server is seen not to order by creation
        (then every page is read). A video without created_at is never skipped for its time.
        """
        bound = _aware(newer_than)
        seen: set[str] = set()
        ordered = True
        previous: datetime | None = None
        for items in self._pages(
            project_id=project_id,
            folder_id=folder_id,
            title=title,
            order="created_at.desc",
            per_page=per_page,
        ):
            for video in items:
                created = _aware(video.created_at)
                if created is not None:
                    if previous is not None and created > previous and ordered:
                        ordered = False
                        log.info("scan_videos: the list is not newest first; reading every page")
                    previous = created
                if video.id in seen:
                    continue
                seen.add(video.id)
                if bound is not None and created is not None and created < bound:
                    continue
                if self._matches(video, project_id, folder_id, title):
                    yield video
            last = _aware(items[-1].created_at)
            if ordered and bound is not None and last is not None and last < bound:
                return

    def _matches(
        self, video: Video, project_id: str | None, folder_id: str | None, title: str | None
    ) -> bool:
        """Whether the video passes the filters, checked here (a field the list left out is read with GET)."""
        wanted = {"project_id": project_id, "folder_id": folder_id, "title": title}
        if any(v is not None and name not in video.model_fields_set for name, v in wanted.items()):
            try:
                video = self.get_video(video.id)
            except NotFoundError:
                return False  # deleted since it was listed
        if title is not None and video.title != title:
            return False
        if project_id is not None and not same_id(project_id, video.project_id):
            return False
        return folder_id is None or same_id(folder_id, video.folder_id)


def _aware(when: datetime | None) -> datetime | None:
    """A datetime with a zone (naive ones are UTC)."""
    if when is not None and when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when
