"""The videos resource (spec 4.1): lists, get, update, delete, copy, move, cut, concat, chapters."""

from __future__ import annotations

import builtins
import hashlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from videoferry.connectors.client.answers import video_of
from videoferry.connectors.client.live_support import deleting, given_fields, meta_of, present
from videoferry.connectors.client.paging import walk_pages
from videoferry.connectors.client.poll_pacing import PollPacing
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.errors import (
    NotFoundError,
    ResponseFormatError,
    TransportError,
    UnknownOutcomeError,
)
from videoferry.connectors.ids import same_id, try_normal_id
from videoferry.connectors.models import Chapters, Crop, Video, VideoPage
from videoferry.connectors.retry import CallKind
from videoferry.core.tidy import same_title

__all__ = ["Videos", "ChapterInput", "video_path"]

log = logging.getLogger(__name__)

#: A chapter as callers give it: (seconds, title) or {"time": seconds, "title": ...}.
ChapterInput = tuple[float, str] | Mapping[str, Any]


def video_path(video_id: str, suffix: str = "") -> str:
    """/v1/videos/<id><suffix>, the id quoted."""
    if not video_id:
        raise ValueError("video_id must not be empty")
    return f"/v1/videos/{quote(str(video_id), safe='')}{suffix}"


def _seconds_to_ms(seconds: float) -> int:
    if seconds < 0:
        raise ValueError("chapter time must not be negative")
    return round(seconds * 1000)


def _chapter_item(item: ChapterInput) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return {"time": _seconds_to_ms(float(item["time"])), "title": str(item.get("title", ""))}
    seconds, title = item
    return {"time": _seconds_to_ms(float(seconds)), "title": str(title)}


class Videos:
    """`client.videos`: one typed method per videos endpoint, each a call of the transport.

    Lists end by the server's own page size (`pagination.per_page`, else the number of items it sent), not
    by a `total` the server may leave out; a server that repeats a page does not make a walk endless.
    Methods the spec does not show are learned from a 405 (the transport); answers the spec does not show
    are read whatever their shape (connectors/README.md).
    """

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._gets = PollPacing(transport.poll_rule)

    def __repr__(self) -> str:
        return f"Videos({self._transport!r})"

    # -- lists ----------------------------------------------------------------------------------------

    def list(
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
        params.update(
            present({"project_id": project_id, "folder_id": folder_id, "title": title, "order": order})
        )
        body = self._transport.call(
            "GET", "/v1/videos", operation="list_videos", kind=CallKind.IDEMPOTENT, params=params
        )
        if not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise ResponseFormatError("list answer has no data array", operation="list_videos")
        meta = meta_of(body)
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
    ) -> Iterator[builtins.list[Video]]:
        """Every non-empty page of the list, in order (paging.walk_pages says when the walk ends)."""

        def fetch(page: int) -> VideoPage:
            return self.list(
                project_id=project_id,
                folder_id=folder_id,
                title=title,
                order=order,
                page=page,
                per_page=per_page,
            )

        return walk_pages(fetch, lambda video: video.id, "list_videos")

    def iter(
        self,
        *,
        project_id: str | None = None,
        folder_id: str | None = None,
        title: str | None = None,
        order: str | None = None,
        per_page: int = 100,
    ) -> Iterator[Video]:
        """Every matching video, page by page (one API call per page); a video seen twice is yielded once.

        The filters are the server's (use scan for filters checked here too).
        """
        seen: set[str] = set()
        for items in self._pages(
            project_id=project_id, folder_id=folder_id, title=title, order=order, per_page=per_page
        ):
            for video in items:
                if video.id not in seen:
                    seen.add(video.id)
                    yield video

    def scan(
        self,
        *,
        project_id: str | None = None,
        folder_id: str | None = None,
        title: str | None = None,
        newer_than: datetime | None = None,
        per_page: int = 100,
    ) -> Iterator[Video]:
        """Videos newest first (order=created_at.desc), every filter checked here too, down to `newer_than`.

        A service may ignore a filter (the spec names none), so what comes back is verified locally: the title
        as a service may keep it (core.tidy.same_title: tidied, or cut by a cap), project_id / folder_id in
        any id notation (a video whose answer leaves the field out is read
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
                video = self.get(video.id)
            except NotFoundError:
                return False  # deleted since it was listed
        if title is not None and not same_title(title, video.title or ""):
            return False
        if project_id is not None and not same_id(project_id, video.project_id):
            return False
        return folder_id is None or same_id(folder_id, video.folder_id)

    # -- one video ---------------------------------------------------------------------------------

    def download_digest(self, link: str, chunk_size: int = 1024 * 1024) -> tuple[int, str]:
        """(bytes, md5 hex) of an asset's download link (spec 2.2), streamed, never held whole in memory.

        The link is signed (a capability): it is sent without the token, is not an API call (no rate limit),
        and never appears in an error (ResponseFormatError with the HTTP status, or TransportError).
        """
        digest = hashlib.md5(usedforsecurity=False)
        size = 0
        timeout = httpx.Timeout(self._transport.timeout, connect=min(self._transport.timeout, 10.0))
        try:
            with httpx.stream("GET", link, timeout=timeout, follow_redirects=True) as answer:
                if answer.status_code != 200:
                    raise ResponseFormatError(
                        "the download link did not give the file",
                        status=answer.status_code,
                        operation="download_asset",
                    )
                for chunk in answer.iter_bytes(chunk_size):
                    digest.update(chunk)
                    size += len(chunk)
        except httpx.HTTPError as exc:
            raise TransportError(type(exc).__name__, operation="download_asset") from None
        return size, digest.hexdigest()

    def get(self, video_id: str) -> Video:
        """GET /v1/videos/:id (404 -> NotFoundError).

        The service's poll rule, kept here for every caller: a GET of a video waits until the rule's seconds
        (transport.poll_rule: the spec's 5 s) after the last GET of the same video was answered (at most that
        long), a retry of this one included; GETs of one video go one at a time.
        """
        key = try_normal_id(video_id) or video_id
        with self._gets.one_at_a_time(key):
            body = self._transport.call(
                "GET",
                video_path(video_id),
                operation="get_video",
                kind=CallKind.IDEMPOTENT,
                pace=lambda: self._gets.turn(key),
            )
        return video_of(body, "get_video")

    def update(
        self,
        video_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        privacy_type: str | None = None,
        privacy_domains: Sequence[str] | None = None,
        additional_materials_enabled: bool | None = None,
        tags: Sequence[str] | None = None,
        **extra: Any,
    ) -> Video:
        """PATCH (or PUT, learned from a 405) /v1/videos/:id: only the given (non-None) fields change.

        Idempotent, so it is retried. An answer without a video is followed by one GET.
        """
        fields: dict[str, Any] = {
            "title": title,
            "description": description,
            "privacy_type": privacy_type,
            "privacy_domains": list(privacy_domains) if privacy_domains is not None else None,
            "additional_materials_enabled": additional_materials_enabled,
            "tags": list(tags) if tags is not None else None,
            **extra,
        }
        payload = given_fields(fields, "update_video")
        body = self._transport.call(
            "PATCH",
            video_path(video_id),
            operation="update_video",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        return self._answered(body, "update_video", video_id, create=False)

    def delete(self, video_id: str) -> None:
        """DELETE (or POST, learned from a 405) /v1/videos/:id (permanent).

        Retried like any idempotent call. A 404 on a *repeated* attempt, after an attempt whose outcome was
        unknown (network error or 5xx), counts as success: the earlier attempt deleted it. A 404 on the
        first attempt raises NotFoundError.
        """
        self._transport.call(
            "DELETE",
            video_path(video_id),
            operation="delete_video",
            kind=CallKind.IDEMPOTENT,
            on_error=deleting("delete_video"),
        )

    def copy(self, video_id: str, parent_id: str | None = None) -> Video:
        """POST (or PUT) /v1/videos/:id/copy: a full copy (into parent_id, project or folder); a create.

        Answered with only an id: one GET of it. Answered without a video: UnknownOutcomeError(no_body);
        look the copy up by listing, never repeat it.
        """
        payload = {"parent_id": parent_id} if parent_id is not None else {}
        return self._action(video_id, "copy", CallKind.CREATE, payload)

    def move(self, video_id: str, project_id: str, folder_id: str | None = None) -> Video:
        """POST (or PUT) /v1/videos/:id/move: same id, new project/folder. Idempotent (same target): retried.

        An answer without a full video is followed by one GET (of the id it names, else of video_id).
        """
        payload: dict[str, Any] = {"project_id": project_id}
        if folder_id is not None:
            payload["folder_id"] = folder_id
        return self._action(video_id, "move", CallKind.IDEMPOTENT, payload)

    def cut(
        self,
        video_id: str,
        *,
        trim: Sequence[tuple[float, float]] | None = None,
        crop: Crop | Mapping[str, Any] | None = None,
        title: str | None = None,
        description: str | None = None,
        project_id: str | None = None,
        folder_id: str | None = None,
    ) -> Video:
        """POST (or PUT) /v1/videos/:id/cut: trim ranges (start, length; seconds) and/or crop.

        The spec says both "written to the same id" and "a new video": the video the answer names is
        returned (compare its id with video_id). Only an id: one GET of it; no body: video_id is read again
        (if its version did not change, the cut may have made a new video: look it up). An unknown outcome
        raises UnknownOutcomeError (compare version/updated_at/duration before repeating), so a trim is
        never applied twice.
        """
        payload: dict[str, Any] = {}
        if trim is not None:
            payload["trim"] = [{"start": float(start), "length": float(length)} for start, length in trim]
        if crop is not None:
            crop_model = crop if isinstance(crop, Crop) else Crop.model_validate(dict(crop))
            payload["crop"] = crop_model.model_dump(exclude_none=True)
        payload.update(
            present(
                {"title": title, "description": description, "project_id": project_id, "folder_id": folder_id}
            )
        )
        # A service may write the cut back or make a new video (the spec says both): the answer names which.
        return self._action(video_id, "cut", CallKind.IN_PLACE, payload)

    def concat(
        self, video_id: str, *, prepend: Sequence[str] = (), append: Sequence[str] = (), replace: bool = False
    ) -> Video:
        """POST (or PUT) /v1/videos/:id/concat: a new video of prepend + source + append (ids); a create.

        Answers as for copy_video: only an id -> one GET; no video -> UnknownOutcomeError(no_body).
        """
        if not prepend and not append:
            raise ValueError("concat_video needs videos to prepend or append")
        payload: dict[str, Any] = {"replace": replace}
        if prepend:
            payload["prepend"] = [{"video_id": vid} for vid in prepend]
        if append:
            payload["append"] = [{"video_id": vid} for vid in append]
        return self._action(video_id, "concat", CallKind.CREATE, payload)

    def set_chapters(self, video_id: str, items: Sequence[ChapterInput], enabled: bool = True) -> Chapters:
        """PUT (or POST, learned from a 405) /v1/videos/:id/chapters: replace all markers; seconds -> ms."""
        payload = {"items": [_chapter_item(item) for item in items], "enabled": enabled}
        body = self._transport.call(
            "PUT",
            video_path(video_id, "/chapters"),
            operation="set_chapters",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        data = body.get("data") if isinstance(body, dict) else None
        if data is None:  # no body (the spec shows none for some services): read what is stored
            chapters = self.get(video_id).chapters
            if chapters is None:
                raise ResponseFormatError("no chapters in the answer or the video", operation="set_chapters")
            return chapters
        try:
            return Chapters.model_validate(data)
        except Exception as exc:
            raise ResponseFormatError(
                f"answer is not chapters ({type(exc).__name__})", operation="set_chapters"
            ) from None

    def _action(self, video_id: str, action: str, kind: CallKind, payload: dict[str, Any]) -> Video:
        """POST (or PUT) /v1/videos/:id/<action> (operation "<action>_video"); the video its answer names.

        A CREATE (copy, concat) answered without a video raises UnknownOutcomeError; any other reads
        video_id again (see _answered).
        """
        operation = f"{action}_video"
        body = self._transport.call(
            "POST", video_path(video_id, f"/{action}"), operation=operation, kind=kind, json_body=payload
        )
        return self._answered(body, operation, video_id, create=kind is CallKind.CREATE)

    def _answered(self, body: Any, operation: str, video_id: str, *, create: bool) -> Video:
        """The video an operation's 2xx answer names, whatever the answer's shape (spec: not shown).

        A full video is taken as is; `{data: {id}}` alone is read with one GET of that id. No usable video
        in the answer: an in-place operation (move, cut) reads `video_id` again; a create (copy, concat)
        raises UnknownOutcomeError(cause_kind="no_body"), for the caller to find what it made by listing,
        never by repeating it.
        """
        data = body.get("data") if isinstance(body, dict) else None
        named = data.get("id") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(named, str) and named:
            if len(data) > 1:
                try:
                    return Video.model_validate(data)
                except Exception:  # pydantic.ValidationError: not a video, but it names one
                    log.debug("%s: the answer names a video but is not one; reading it", operation)
            return self.get(named)
        if create:
            raise UnknownOutcomeError("the answer named no video", cause_kind="no_body", operation=operation)
        return self.get(video_id)


def _aware(when: datetime | None) -> datetime | None:
    """A datetime with a zone (naive ones are UTC)."""
    if when is not None and when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when
