"""The videos API client: one typed method per endpoint, rate limited, retried by call kind."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from connectors.config import Settings
from connectors.errors import NotFoundError, ResponseFormatError, TransportError, VideoApiError
from connectors.limiter import ApiRateLimiter, limiter_from_url, shared_limiter
from connectors.listing import ListingCalls
from connectors.models import Chapters, Crop, Video
from connectors.retry import CallKind, RetryPolicy
from connectors.transport import video_path
from connectors.uploads import UPLOAD_BODY_CHUNK, TrimRange, UploadCalls

__all__ = ["VideoClient", "ChapterInput", "TrimRange", "UPLOAD_BODY_CHUNK"]

log = logging.getLogger(__name__)

#: A chapter as callers give it: (seconds, title) or {"time": seconds, "title": ...}.
ChapterInput = tuple[float, str] | Mapping[str, Any]


def _seconds_to_ms(seconds: float) -> int:
    if seconds < 0:
        raise ValueError("chapter time must not be negative")
    return round(seconds * 1000)


def _chapter_item(item: ChapterInput) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return {"time": _seconds_to_ms(float(item["time"])), "title": str(item.get("title", ""))}
    seconds, title = item
    return {"time": _seconds_to_ms(float(seconds)), "title": str(title)}


class VideoClient(ListingCalls, UploadCalls):
    """Typed client for spec sections 4.1 (videos) and 4.2 (uploads).

    Thread-safe: one pooled httpx.Client per host (connectors/transport.py). Every attempt of every API
    call passes the shared rate limiter and feeds `clock` (the service's clock). Retries follow the call
    kind (see connectors/README.md): idempotent calls are retried on 5xx/network/429; creates and cut are
    retried only when the failure provably happened before sending (or on 429), otherwise
    UnknownOutcomeError is raised for the ledger to reconcile. Methods the spec does not show are learned
    from a 405 (`methods()`); answers the spec does not show are read whatever their shape (README).
    Lists: connectors/listing.py; uploads: connectors/uploads.py.
    """

    @classmethod
    def from_settings(
        cls, settings: Settings, *, limiter: ApiRateLimiter | None = None, retry: RetryPolicy | None = None
    ) -> VideoClient:
        """A client for the configured service; the limiter backend comes from settings.limiter_url."""
        if limiter is None:
            if settings.limiter_url in (None, "", "memory"):
                limiter = shared_limiter(settings.token, settings.rate_per_second, settings.rate_per_minute)
            else:
                limiter = limiter_from_url(
                    settings.limiter_url,
                    key=settings.token,
                    per_second=settings.rate_per_second,
                    per_minute=settings.rate_per_minute,
                )
        return cls(
            settings.api_url,
            settings.upload_url,
            settings.token,
            limiter=limiter,
            timeout=settings.timeout,
            retry=retry,
        )

    # -- videos (4.1) ---------------------------------------------------------------------------------

    def update_video(
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
        payload = {k: v for k, v in fields.items() if v is not None}
        if not payload:
            raise ValueError("update_video needs at least one field")
        body = self._call(
            "PATCH",
            video_path(video_id),
            operation="update_video",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        return self._answered_video(body, "update_video", video_id, create=False)

    def delete_video(self, video_id: str) -> None:
        """DELETE /v1/videos/:id (permanent).

        Retried like any idempotent call. A 404 on a *repeated* attempt, after an attempt whose outcome was
        unknown (network error or 5xx), counts as success: the earlier attempt deleted it. A 404 on the
        first attempt raises NotFoundError.
        """
        ambiguous = False

        def on_error(exc: VideoApiError, number: int) -> httpx.Response | None:
            nonlocal ambiguous
            if isinstance(exc, NotFoundError) and number > 1 and ambiguous:
                log.info("delete_video: 404 after an unanswered attempt; treating as deleted")
                return httpx.Response(204)
            if (isinstance(exc, TransportError) and exc.sent) or (exc.status or 0) >= 500:
                ambiguous = True
            return None

        self._call(
            "DELETE",
            video_path(video_id),
            operation="delete_video",
            kind=CallKind.IDEMPOTENT,
            on_error=on_error,
        )

    def copy_video(self, video_id: str, parent_id: str | None = None) -> Video:
        """POST (or PUT) /v1/videos/:id/copy: a full copy (into parent_id, project or folder); a create.

        Answered with only an id: one GET of it. Answered without a video: UnknownOutcomeError(no_body);
        look the copy up by listing, never repeat it.
        """
        payload = {"parent_id": parent_id} if parent_id is not None else {}
        body = self._call(
            "POST",
            video_path(video_id, "/copy"),
            operation="copy_video",
            kind=CallKind.CREATE,
            json_body=payload,
        )
        return self._answered_video(body, "copy_video", video_id, create=True)

    def move_video(self, video_id: str, project_id: str, folder_id: str | None = None) -> Video:
        """POST (or PUT) /v1/videos/:id/move: same id, new project/folder. Idempotent (same target): retried.

        An answer without a full video is followed by one GET (of the id it names, else of video_id).
        """
        payload: dict[str, Any] = {"project_id": project_id}
        if folder_id is not None:
            payload["folder_id"] = folder_id
        body = self._call(
            "POST",
            video_path(video_id, "/move"),
            operation="move_video",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        return self._answered_video(body, "move_video", video_id, create=False)

    def cut_video(
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
        for name, value in (
            ("title", title),
            ("description", description),
            ("project_id", project_id),
            ("folder_id", folder_id),
        ):
            if value is not None:
                payload[name] = value
        body = self._call(
            "POST",
            video_path(video_id, "/cut"),
            operation="cut_video",
            kind=CallKind.IN_PLACE,
            json_body=payload,
        )
        # A service may write the cut back or make a new video (the spec says both): the answer names which.
        return self._answered_video(body, "cut_video", video_id, create=False)

    def concat_video(
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
        body = self._call(
            "POST",
            video_path(video_id, "/concat"),
            operation="concat_video",
            kind=CallKind.CREATE,
            json_body=payload,
        )
        return self._answered_video(body, "concat_video", video_id, create=True)

    def set_chapters(self, video_id: str, items: Sequence[ChapterInput], enabled: bool = True) -> Chapters:
        """PUT (or POST, learned from a 405) /v1/videos/:id/chapters: replace all markers; seconds -> ms."""
        payload = {"items": [_chapter_item(item) for item in items], "enabled": enabled}
        body = self._call(
            "PUT",
            video_path(video_id, "/chapters"),
            operation="set_chapters",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        data = body.get("data") if isinstance(body, dict) else None
        if data is None:  # no body (the spec shows none for some services): read what is stored
            chapters = self.get_video(video_id).chapters
            if chapters is None:
                raise ResponseFormatError("no chapters in the answer or the video", operation="set_chapters")
            return chapters
        try:
            return Chapters.model_validate(data)
        except Exception as exc:
            raise ResponseFormatError(
                f"answer is not chapters ({type(exc).__name__})", operation="set_chapters"
            ) from None
