"""The uploads resource (spec 4.2): init for tus, the single-request upload and URL import (ASCII headers)."""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

from videoferry.connectors.client.answers import data_of
from videoferry.connectors.client.live_support import present
from videoferry.connectors.client.transport import BodyFactory, Transport
from videoferry.connectors.errors import UnknownOutcomeError, ValidationError
from videoferry.connectors.models import UploadResult, UploadSession
from videoferry.connectors.retry import CallKind
from videoferry.connectors.sources import ByteSource
from videoferry.connectors.titles import header_exact, header_safe_filename, header_safe_title

__all__ = ["Uploads", "TrimRange", "REPLACE_FIELDS", "UPLOAD_BODY_CHUNK"]

#: A trim range in seconds: (start, length); length None means "to the end" (upload trim only).
TrimRange = tuple[float, float | None]

#: The names a replace session's video may travel under in /v2/init (spec: "not shown"): ours first.
REPLACE_FIELDS = ("video_id", "replace_video_id")

#: Bytes read from a ByteSource per piece of a streamed single-request upload body.
UPLOAD_BODY_CHUNK = 1024 * 1024


def _ascii(value: str) -> bytes:
    """A header value as bytes; only printable ASCII is ever put in a header (titles.header_exact)."""
    return value.encode("ascii")


class Uploads:
    """`client.uploads`: POST /v2/init and /v2/video (method not shown: POST, else PUT from a 405)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        #: The name init of type replace takes the video under (REPLACE_FIELDS; learned from a refusal).
        self._replace_field = REPLACE_FIELDS[0]

    def __repr__(self) -> str:
        return f"Uploads({self._transport!r})"

    def create_video(
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
        """How a video is made for a tus upload: POST {upload_url}/v2/init (type video) creates it now;
        returns its id and the tus endpoint (`single` and `import_url` make one in one /v2/video request).

        JSON, so the title travels exactly. Creates: an unknown outcome raises UnknownOutcomeError. The spec
        calls the answer a "session": a service may answer a session's id rather than the video's (the
        `init-session-id` variant); the caller checks with one GET.
        """
        payload: dict[str, Any] = {
            "type": "video",
            "parent_id": parent_id,
            "title": title,
            **present(
                {
                    "filename": filename,
                    "description": description,
                    "subtitle": subtitle,
                    "client_ip": client_ip,
                }
            ),
        }
        return self._init(payload, filesize, "init_upload")

    def init_replace(self, *, video_id: str, filesize: int, filename: str | None = None) -> UploadSession:
        """POST {upload_url}/v2/init type replace: a tus session whose finished bytes replace video_id's.

        The spec does not show replace's parameters: `video_id` is sent (as for an attachment); a service
        that refuses it naming `replace_video_id` (the header's name) gets that name instead, learned once
        (a validation refusal did nothing, so the one resend is safe). Nothing changes until the last byte
        arrives, so the call is repeatable: one whose answer was lost or 5xx is sent again by the transport's
        retries, with backoff (a session left without bytes replaces nothing). Still without an answer after
        them: UnknownOutcomeError.
        """
        field = self._replace_field
        payload: dict[str, Any] = {"type": "replace", field: video_id, **present({"filename": filename})}
        try:
            return self._init(payload, filesize, "init_replace", kind=CallKind.IDEMPOTENT)
        except ValidationError as exc:
            other = REPLACE_FIELDS[1] if field == REPLACE_FIELDS[0] else REPLACE_FIELDS[0]
            if other not in {str(p.get("name")) for p in exc.invalid_params}:
                raise
        self._replace_field = other
        payload[other] = payload.pop(field)
        return self._init(payload, filesize, "init_replace", kind=CallKind.IDEMPOTENT)

    def init_attachment(self, *, video_id: str, filesize: int, filename: str | None = None) -> UploadSession:
        """POST {upload_url}/v2/init type attachment: a tus session whose finished file becomes one of
        video_id's additional materials (data.id names the material or the session: not shown).
        An unknown outcome raises UnknownOutcomeError."""
        payload: dict[str, Any] = {
            "type": "attachment",
            "video_id": video_id,
            **present({"filename": filename}),
        }
        return self._init(payload, filesize, "init_attachment")

    def _init(
        self, payload: dict[str, Any], filesize: int, operation: str, kind: CallKind = CallKind.CREATE
    ) -> UploadSession:
        """One POST /v2/init with filesize (tus needs it); its answer, or UnknownOutcomeError (CREATE)."""
        if filesize < 0:
            raise ValueError("filesize must not be negative")
        body = self._transport.call(
            "POST",
            "/v2/init",
            operation=operation,
            kind=kind,
            host="upload",
            json_body={**payload, "filesize": filesize},
        )
        try:
            return UploadSession.model_validate(data_of(body, operation))
        except Exception as exc:
            # 2xx but unusable: the video probably exists; the caller must reconcile.
            raise UnknownOutcomeError(
                f"init answer malformed ({type(exc).__name__})",
                cause_kind="bad_response",
                operation=operation,
            ) from None

    def single(
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
        """{upload_url}/v2/video with the file as raw body (streamed from the source, constant memory).

        Metadata travels in headers, and only printable ASCII arrives the same whether the service decodes
        them as latin-1 or UTF-8: another title is sent as a placeholder derived from title_key (default:
        parent, file name and size) and result.title_pending is True; another description is left out and
        listed in result.pending_fields. Creates (or replaces): an unknown outcome raises UnknownOutcomeError.
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
        headers, pending = _upload_headers(
            parent_id=parent_id,
            title=title,
            key=key,
            filename=name,
            description=description,
            replace_video_id=replace_video_id,
            trim=trim,
        )
        guessed = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        headers["Content-Type"] = _ascii(guessed if header_exact(guessed) else "application/octet-stream")
        headers["Content-Length"] = _ascii(str(size))
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
        """{upload_url}/v2/video with X-Video-URL and an empty body: the service fetches the file.

        The URL may be a capability (a presigned link): it is never logged. Titles as in single()
        (placeholder key default: parent and URL). Creates: an unknown outcome raises UnknownOutcomeError.
        """
        if not url.startswith(("http://", "https://")):
            raise ValueError("import_url needs an http(s) URL")
        key = title_key or f"{parent_id}:{url}"
        headers, pending = _upload_headers(
            parent_id=parent_id,
            title=title,
            key=key,
            filename=filename,
            description=description,
            replace_video_id=replace_video_id,
            trim=trim,
        )
        # Percent-encoding leaves printable ASCII only (non-ASCII is UTF-8 percent-encoded).
        headers["X-Video-URL"] = _ascii(quote(url, safe=":/?#[]@!$&'()*+,;=%~"))
        headers["Content-Length"] = b"0"
        return self._post_video(headers, lambda: b"", pending, operation="import_url")

    def _post_video(
        self, headers: dict[str, bytes], body: BodyFactory, pending: list[str], *, operation: str
    ) -> UploadResult:
        answer = self._transport.call(
            "POST",
            "/v2/video",
            operation=operation,
            kind=CallKind.CREATE,
            host="upload",
            headers=headers,
            body=body,
        )
        try:
            data = data_of(answer, operation)
            return UploadResult.model_validate({**data, "pending_fields": pending})
        except Exception as exc:
            raise UnknownOutcomeError(
                f"upload answer malformed ({type(exc).__name__})",
                cause_kind="bad_response",
                operation=operation,
            ) from None


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
    """The metadata headers of /v2/video (printable ASCII only) and the fields owed by update."""
    for name, value in (("parent_id", parent_id), ("replace_video_id", replace_video_id)):
        if value is not None and not header_exact(value):
            raise ValueError(f"{name} is not an identifier that fits a header")
    pending: list[str] = []
    sent_title, title_pending = header_safe_title(title, key)
    if title_pending:
        pending.append("title")
    headers: dict[str, bytes] = {"X-Parent-ID": _ascii(parent_id), "X-Video-Title": _ascii(sent_title)}
    if description is not None:
        if header_exact(description):
            headers["X-Video-Description"] = _ascii(description)
        else:
            pending.append("description")
    if filename:
        headers["X-File-Name"] = _ascii(header_safe_filename(filename))
    if replace_video_id is not None:
        headers["X-Replace-Video-ID"] = _ascii(replace_video_id)
    if trim is not None:
        start, length = trim
        spec: dict[str, float] = {"start": float(start)}
        if length is not None:
            spec["length"] = float(length)
        headers["X-Video-Trim"] = _ascii(json.dumps(spec))
    return headers, pending


def _iter_source(source: ByteSource) -> Iterator[bytes]:
    offset = 0
    while offset < source.size:
        chunk = source.read_range(offset, UPLOAD_BODY_CHUNK)
        if not chunk:
            raise OSError("source ended early")
        offset += len(chunk)
        yield chunk
