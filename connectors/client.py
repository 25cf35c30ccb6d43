"""The videos and uploads API client: one typed method per endpoint, rate limited, retried by call kind."""

from __future__ import annotations

import json
import logging
import mimetypes
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from connectors.clock import ServiceClock
from connectors.config import Settings
from connectors.errors import (
    InvalidRequestError,
    MethodNotAllowedError,
    NotFoundError,
    ResponseFormatError,
    TransportError,
    UnknownOutcomeError,
    VideoApiError,
    error_from_response,
)
from connectors.ids import same_id
from connectors.limiter import ApiRateLimiter, limiter_from_url, shared_limiter
from connectors.methods import MethodBook
from connectors.models import Chapters, Crop, UploadResult, UploadSession, Video, VideoPage
from connectors.redact import install_httpx_redaction
from connectors.retry import CallKind, RetryPolicy, run_with_retries
from connectors.sources import ByteSource
from connectors.titles import header_exact, header_safe_filename, header_safe_title

__all__ = ["VideoClient", "ChapterInput", "TrimRange", "UPLOAD_BODY_CHUNK"]

log = logging.getLogger(__name__)

#: A chapter as callers give it: (seconds, title) or {"time": seconds, "title": ...}.
ChapterInput = tuple[float, str] | Mapping[str, Any]
#: A trim range in seconds: (start, length); length None means "to the end" (upload trim only).
TrimRange = tuple[float, float | None]

#: Bytes read from a ByteSource per piece of a streamed single-request upload body.
UPLOAD_BODY_CHUNK = 1024 * 1024

_BodyFactory = Callable[[], bytes | Iterable[bytes]]


def _video_path(video_id: str, suffix: str = "") -> str:
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


def _latin1(value: str) -> bytes:
    return value.encode("latin-1")


class VideoClient:
    """Typed client for spec sections 4.1 (videos) and 4.2 (uploads).

    Thread-safe: one pooled httpx.Client per host. Every attempt of every API call passes the shared
    rate limiter. Retries follow the call kind (see connectors/README.md): idempotent calls are retried on
    5xx/network/429; creates and cut are retried only when the failure provably happened before sending
    (or on 429), otherwise UnknownOutcomeError is raised for the ledger to reconcile.
    """

    def __init__(
        self,
        api_url: str,
        upload_url: str,
        token: str,
        *,
        limiter: ApiRateLimiter | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        max_connections: int = 32,
        auth_scheme: str | None = "Bearer",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not token:
            raise ValueError("token must not be empty (set VIDEOFERRY_TOKEN)")
        install_httpx_redaction()
        self.api_url = api_url.rstrip("/")
        self.upload_url = upload_url.rstrip("/")
        self.limiter = limiter if limiter is not None else shared_limiter(token)
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        #: The service's clock, learned from the Date header of every answer (lookups never assume ours).
        self.clock = ServiceClock()
        self._methods = MethodBook()
        timeouts = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        pool = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        # The spec leaves the scheme unnamed; "Bearer <token>" unless the value already names a scheme.
        authorization = token if " " in token.strip() or not auth_scheme else f"{auth_scheme} {token}"
        headers = {"Authorization": authorization, "Accept": "application/json", "User-Agent": "videoferry"}
        self._api = httpx.Client(
            base_url=self.api_url, headers=headers, timeout=timeouts, limits=pool, transport=transport
        )
        self._upload = httpx.Client(
            base_url=self.upload_url, headers=headers, timeout=timeouts, limits=pool, transport=transport
        )

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

    def close(self) -> None:
        """Close both connection pools (the limiter is shared and stays open)."""
        self._api.close()
        self._upload.close()

    def __enter__(self) -> VideoClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"VideoClient(api_url={self.api_url!r}, upload_url={self.upload_url!r})"

    # -- transport ------------------------------------------------------------------------------------

    def _attempt(
        self,
        http: httpx.Client,
        method: str,
        path: str,
        *,
        operation: str,
        params: Mapping[str, Any] | None,
        json_body: Any,
        headers: Mapping[str, bytes] | None,
        body: _BodyFactory | None,
    ) -> httpx.Response:
        self.limiter.acquire()
        sent = datetime.now(UTC)
        try:
            response = http.request(
                method,
                path,
                params=params,
                json=json_body,
                headers=[(name.encode("ascii"), value) for name, value in (headers or {}).items()],
                content=body() if body is not None else None,
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise TransportError(
                f"{type(exc).__name__} before sending",
                sent=False,
                timed_out=isinstance(exc, httpx.TimeoutException),
                operation=operation,
            ) from None
        except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
            raise InvalidRequestError(
                f"request could not be sent ({type(exc).__name__})", operation=operation
            ) from None
        except httpx.TimeoutException as exc:
            raise TransportError(
                f"{type(exc).__name__}", sent=True, timed_out=True, operation=operation
            ) from None
        except httpx.TransportError as exc:
            raise TransportError(f"{type(exc).__name__}", sent=True, operation=operation) from None
        self.clock.observe_date_header(sent, datetime.now(UTC), response.headers.get("date"))
        if response.status_code == 429:
            self.limiter.pause()
        if not response.is_success:
            raise error_from_response(response, operation=operation)
        log.debug(
            "%s %s -> %s request_id=%s",
            operation,
            method,
            response.status_code,
            response.headers.get("x-request-id"),
        )
        return response

    def _call(
        self,
        method: str,
        path: str,
        *,
        operation: str,
        kind: CallKind,
        host: str = "api",
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        headers: Mapping[str, bytes] | None = None,
        body: _BodyFactory | None = None,
        on_error: Callable[[VideoApiError, int], httpx.Response | None] | None = None,
    ) -> Any:
        """One API call with retries; returns the decoded JSON body (None for an empty body)."""
        http = self._api if host == "api" else self._upload
        current = [self._methods.method(operation, method)]

        def send() -> httpx.Response:
            return self._attempt(
                http,
                current[0],
                path,
                operation=operation,
                params=params,
                json_body=json_body,
                headers=headers,
                body=body,
            )

        def attempt(number: int) -> httpx.Response:
            try:
                try:
                    return send()
                except MethodNotAllowedError:
                    other = self._methods.other(operation, current[0])
                    if other is None:
                        raise
                    current[0] = other  # refused before anything happened: the other method is safe
                    response = send()
                    self._methods.learn(operation, other)
                    return response
            except VideoApiError as exc:
                if on_error is not None:
                    substitute = on_error(exc, number)
                    if substitute is not None:
                        return substitute
                raise

        response = run_with_retries(attempt, kind=kind, policy=self.retry)
        if not response.content:
            return None
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            error = ResponseFormatError(
                "answer is not JSON",
                status=response.status_code,
                request_id=response.headers.get("x-request-id"),
                operation=operation,
            )
            if kind is CallKind.IDEMPOTENT:
                raise error from None
            raise UnknownOutcomeError(
                "answer is not JSON",
                cause_kind="bad_response",
                status=response.status_code,
                request_id=error.request_id,
                operation=operation,
            ) from None

    def methods(self) -> dict[str, str]:
        """operation -> HTTP method in use, for the operations whose method the spec does not show."""
        return self._methods.snapshot()

    def _answered_video(self, body: Any, operation: str, video_id: str, *, create: bool) -> Video:
        """The video an operation's 2xx answer names, whatever the answer's shape (spec: not shown).

        A full video is taken as is; `{data: {id}}` alone is read with one GET. No body: an in-place operation
        reads video_id again; a create raises UnknownOutcomeError (cause no_body), for the caller to find
        what it made by listing, never by repeating it.
        """
        data = body.get("data") if isinstance(body, dict) else None
        if isinstance(data, dict) and data.get("id") and len(data) > 1:
            return self._created_video(body, operation) if create else self._video(body, operation)
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            return self.get_video(data["id"])
        if create:
            raise UnknownOutcomeError(
                "the answer named no video", cause_kind="no_body", operation=operation
            )
        return self.get_video(video_id)

    @staticmethod
    def _data(body: Any, operation: str) -> Any:
        if isinstance(body, dict) and "data" in body:
            return body["data"]
        raise ResponseFormatError("answer has no data", operation=operation)

    def _created_video(self, body: Any, operation: str) -> Video:
        """A video from a create's 2xx answer; an unusable answer means the outcome is unknown."""
        try:
            return self._video(body, operation)
        except ResponseFormatError as exc:
            raise UnknownOutcomeError(
                exc.message, cause_kind="bad_response", status=exc.status, operation=operation
            ) from None

    def _video(self, body: Any, operation: str) -> Video:
        data = self._data(body, operation)
        try:
            return Video.model_validate(data)
        except Exception as exc:  # pydantic.ValidationError: the shape is not a video
            raise ResponseFormatError(
                f"answer is not a video ({type(exc).__name__})", operation=operation
            ) from None

    # -- videos (4.1) ---------------------------------------------------------------------------------

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
        meta = body.get("meta") if isinstance(body.get("meta"), dict) else {}
        assert isinstance(meta, dict)
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

    def iter_videos(
        self,
        *,
        project_id: str | None = None,
        folder_id: str | None = None,
        title: str | None = None,
        order: str | None = None,
        per_page: int = 100,
    ) -> Iterator[Video]:
        """Every matching video, page by page (one API call per page); a video seen twice is yielded once."""
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
            for video in result.items:
                if video.id not in seen:
                    seen.add(video.id)
                    yield video
            # The server's page size wins (it may cap per_page); total, when sent, decides the end.
            size = result.pagination.per_page or len(result.items)
            total = result.pagination.total
            if not result.items:
                return
            if total is not None:
                if page * size >= total:
                    return
            elif len(result.items) < size:
                return
            page += 1

    def scan_videos(
        self,
        *,
        project_id: str | None = None,
        folder_id: str | None = None,
        title: str | None = None,
        newer_than: datetime | None = None,
        per_page: int = 100,
    ) -> Iterator[Video]:
        """Videos newest first, every filter checked here too, down to `newer_than` (the service's clock).

        A service may ignore a filter it does not know (the spec names none), so what comes back is verified
        locally: exact title, and project or folder in any id notation. Stops at the first page whose last
        video was created before newer_than (a video without created_at never stops the scan).
        """
        seen: set[str] = set()
        for videos in self._pages_newest_first(project_id, folder_id, title, per_page):
            for video in videos:
                if video.id in seen:
                    continue
                seen.add(video.id)
                if newer_than is not None and video.created_at is not None and video.created_at < newer_than:
                    continue
                if title is not None and video.title != title:
                    continue
                if project_id is not None and not same_id(project_id, video.project_id):
                    continue
                if folder_id is not None and not same_id(folder_id, video.folder_id):
                    continue
                yield video
            last = videos[-1].created_at
            if newer_than is not None and last is not None and last < newer_than:
                return

    def _pages_newest_first(
        self, project_id: str | None, folder_id: str | None, title: str | None, per_page: int
    ) -> Iterator[list[Video]]:
        """Non-empty pages of the list newest first, until a short page or the total says it was the last."""
        page = 1
        while True:
            result = self.list_videos(
                project_id=project_id,
                folder_id=folder_id,
                title=title,
                order="created_at.desc",
                page=page,
                per_page=per_page,
            )
            if not result.items:
                return
            yield result.items
            size = result.pagination.per_page or len(result.items)
            total = result.pagination.total
            if len(result.items) < size or (total is not None and page * size >= total):
                return
            page += 1

    def get_video(self, video_id: str) -> Video:
        """GET /v1/videos/:id (404 -> NotFoundError)."""
        body = self._call("GET", _video_path(video_id), operation="get_video", kind=CallKind.IDEMPOTENT)
        return self._video(body, "get_video")

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
        """PATCH /v1/videos/:id: only the given (non-None) fields change. Idempotent, so it is retried."""
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
            _video_path(video_id),
            operation="update_video",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        return self._video(body, "update_video")

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
            _video_path(video_id),
            operation="delete_video",
            kind=CallKind.IDEMPOTENT,
            on_error=on_error,
        )

    def copy_video(self, video_id: str, parent_id: str | None = None) -> Video:
        """POST /v1/videos/:id/copy: a full copy (into parent_id, project or folder); a create."""
        payload = {"parent_id": parent_id} if parent_id is not None else {}
        body = self._call(
            "POST",
            _video_path(video_id, "/copy"),
            operation="copy_video",
            kind=CallKind.CREATE,
            json_body=payload,
        )
        return self._answered_video(body, "copy_video", video_id, create=True)

    def move_video(self, video_id: str, project_id: str, folder_id: str | None = None) -> Video:
        """POST /v1/videos/:id/move: same id, new project/folder. Idempotent (same target): retried."""
        payload: dict[str, Any] = {"project_id": project_id}
        if folder_id is not None:
            payload["folder_id"] = folder_id
        body = self._call(
            "POST",
            _video_path(video_id, "/move"),
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
        """POST /v1/videos/:id/cut: trim ranges (start, length; seconds) and/or crop, written to the same id.

        In place: an unknown outcome raises UnknownOutcomeError (compare version/updated_at/duration before
        repeating), so a trim is never applied twice.
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
            _video_path(video_id, "/cut"),
            operation="cut_video",
            kind=CallKind.IN_PLACE,
            json_body=payload,
        )
        # A service may write the cut back or make a new video (the spec says both): the answer names which.
        return self._answered_video(body, "cut_video", video_id, create=False)

    def concat_video(
        self, video_id: str, *, prepend: Sequence[str] = (), append: Sequence[str] = (), replace: bool = False
    ) -> Video:
        """POST /v1/videos/:id/concat: a new video of prepend + source + append (ids); a create."""
        if not prepend and not append:
            raise ValueError("concat_video needs videos to prepend or append")
        payload: dict[str, Any] = {"replace": replace}
        if prepend:
            payload["prepend"] = [{"video_id": vid} for vid in prepend]
        if append:
            payload["append"] = [{"video_id": vid} for vid in append]
        body = self._call(
            "POST",
            _video_path(video_id, "/concat"),
            operation="concat_video",
            kind=CallKind.CREATE,
            json_body=payload,
        )
        return self._answered_video(body, "concat_video", video_id, create=True)

    def set_chapters(self, video_id: str, items: Sequence[ChapterInput], enabled: bool = True) -> Chapters:
        """PUT /v1/videos/:id/chapters: replace all markers; times in seconds, sent as integer ms."""
        payload = {"items": [_chapter_item(item) for item in items], "enabled": enabled}
        body = self._call(
            "PUT",
            _video_path(video_id, "/chapters"),
            operation="set_chapters",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        try:
            return Chapters.model_validate(self._data(body, "set_chapters"))
        except ResponseFormatError:
            raise
        except Exception as exc:
            raise ResponseFormatError(
                f"answer is not chapters ({type(exc).__name__})", operation="set_chapters"
            ) from None

    # -- uploads (4.2) --------------------------------------------------------------------------------

    def init_upload(
        self,
        *,
        parent_id: str,
        title: str,
        filesize: int,
        filename: str | None = None,
        description: str | None = None,
        subtitle: str | None = None,
        client_ip: str | None = None,
    ) -> UploadSession:
        """POST {upload_url}/v2/init (type video): creates the video now; returns its id and the tus endpoint.

        JSON, so the title travels exactly. Creates: an unknown outcome raises UnknownOutcomeError.
        """
        if filesize < 0:
            raise ValueError("filesize must not be negative")
        payload: dict[str, Any] = {
            "type": "video",
            "parent_id": parent_id,
            "title": title,
            "filesize": filesize,
        }
        for name, value in (
            ("filename", filename),
            ("description", description),
            ("subtitle", subtitle),
            ("client_ip", client_ip),
        ):
            if value is not None:
                payload[name] = value
        body = self._call(
            "POST",
            "/v2/init",
            operation="init_upload",
            kind=CallKind.CREATE,
            host="upload",
            json_body=payload,
        )
        try:
            return UploadSession.model_validate(self._data(body, "init_upload"))
        except Exception as exc:
            # 2xx but unusable: the video probably exists; the caller must reconcile.
            raise UnknownOutcomeError(
                f"init answer malformed ({type(exc).__name__})",
                cause_kind="bad_response",
                operation="init_upload",
            ) from None

    def upload_single(
        self,
        *,
        parent_id: str,
        title: str,
        source: ByteSource | bytes,
        filename: str | None = None,
        description: str | None = None,
        content_type: str | None = None,
        replace_video_id: str | None = None,
        trim: TrimRange | None = None,
        title_key: str | None = None,
    ) -> UploadResult:
        """POST {upload_url}/v2/video with the file as raw body (streamed from the source, constant memory).

        Metadata travels in latin-1 headers: a title that cannot (see titles.header_safe_title) is sent as a
        placeholder derived from title_key (default: parent, file name and size) and result.title_pending is
        True; a description that cannot is left out and listed in result.pending_fields. Creates (or
        replaces): an unknown outcome raises UnknownOutcomeError.
        """
        if isinstance(source, bytes | bytearray):
            data = bytes(source)
            size = len(data)
            name = filename or "upload.bin"

            def body() -> bytes | Iterable[bytes]:
                return data

        else:
            src = source
            size = src.size
            name = filename or src.name

            def body() -> bytes | Iterable[bytes]:
                return _iter_source(src)

        key = title_key or f"{parent_id}:{name}:{size}"
        headers, pending = self._upload_headers(
            parent_id=parent_id,
            title=title,
            key=key,
            filename=name,
            description=description,
            replace_video_id=replace_video_id,
            trim=trim,
        )
        headers["Content-Type"] = _latin1(
            content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        )
        headers["Content-Length"] = _latin1(str(size))
        return self._post_video(headers, body, pending, operation="upload_single")

    def import_url(
        self,
        *,
        parent_id: str,
        title: str,
        url: str,
        filename: str | None = None,
        description: str | None = None,
        replace_video_id: str | None = None,
        trim: TrimRange | None = None,
        title_key: str | None = None,
    ) -> UploadResult:
        """POST {upload_url}/v2/video with X-Video-URL and an empty body: the service fetches the file.

        The URL may be a capability (a presigned link): it is never logged. Titles as in upload_single
        (placeholder key default: parent and URL). Creates: an unknown outcome raises UnknownOutcomeError.
        """
        if not url.startswith(("http://", "https://")):
            raise ValueError("import_url needs an http(s) URL")
        key = title_key or f"{parent_id}:{url}"
        headers, pending = self._upload_headers(
            parent_id=parent_id,
            title=title,
            key=key,
            filename=filename,
            description=description,
            replace_video_id=replace_video_id,
            trim=trim,
        )
        headers["X-Video-URL"] = _latin1(quote(url, safe=":/?#[]@!$&'()*+,;=%~"))
        headers["Content-Length"] = b"0"
        return self._post_video(headers, lambda: b"", pending, operation="import_url")

    @staticmethod
    def _upload_headers(
        *,
        parent_id: str,
        title: str,
        key: str,
        filename: str | None,
        description: str | None,
        replace_video_id: str | None,
        trim: TrimRange | None,
    ) -> tuple[dict[str, bytes], list[str]]:
        pending: list[str] = []
        sent_title, title_pending = header_safe_title(title, key)
        if title_pending:
            pending.append("title")
        headers: dict[str, bytes] = {"X-Parent-ID": _latin1(parent_id), "X-Video-Title": _latin1(sent_title)}
        if description is not None:
            if header_exact(description):
                headers["X-Video-Description"] = _latin1(description)
            else:
                pending.append("description")
        if filename:
            headers["X-File-Name"] = _latin1(header_safe_filename(filename))
        if replace_video_id is not None:
            headers["X-Replace-Video-ID"] = _latin1(replace_video_id)
        if trim is not None:
            start, length = trim
            spec: dict[str, float] = {"start": float(start)}
            if length is not None:
                spec["length"] = float(length)
            headers["X-Video-Trim"] = _latin1(json.dumps(spec))
        return headers, pending

    def _post_video(
        self, headers: dict[str, bytes], body: _BodyFactory, pending: list[str], *, operation: str
    ) -> UploadResult:
        answer = self._call(
            "POST",
            "/v2/video",
            operation=operation,
            kind=CallKind.CREATE,
            host="upload",
            headers=headers,
            body=body,
        )
        try:
            data = self._data(answer, operation)
            return UploadResult.model_validate({**data, "pending_fields": pending})
        except Exception as exc:
            raise UnknownOutcomeError(
                f"upload answer malformed ({type(exc).__name__})",
                cause_kind="bad_response",
                operation=operation,
            ) from None


def _iter_source(source: ByteSource) -> Iterator[bytes]:
    offset = 0
    while offset < source.size:
        chunk = source.read_range(offset, UPLOAD_BODY_CHUNK)
        if not chunk:
            raise OSError("source ended early")
        offset += len(chunk)
        yield chunk
