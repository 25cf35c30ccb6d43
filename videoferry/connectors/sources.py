"""Byte sources for uploads: local files read by range, S3 objects from one GET kept open; constant memory."""

from __future__ import annotations

import io
import os
import posixpath
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    IncompleteReadError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from videoferry.connectors.held_stream import HeldStream, read_through
from videoferry.connectors.s3 import (
    S3Config,
    client_error_code,
    get_range,
    head_object,
    parse_s3_uri,
    shared_s3_client,
)
from videoferry.core.redact import safe_uri

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class SourceError(Exception):
    """A source that cannot be opened or read. The message names the uri, never a URL's query string."""

    def __init__(self, uri: str, reason: str) -> None:
        self.uri = safe_uri(uri)
        self.reason = reason
        super().__init__(f"{self.uri}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its parts (a Dask worker's failure reaches the coordinator whole)."""
        return type(self), (self.uri, self.reason)


@runtime_checkable
class ByteSource(Protocol):
    """Something an upload reads from: a name, a size and ranged reads."""

    uri: str
    name: str
    size: int

    def read_range(self, offset: int, length: int) -> bytes:
        """Return ``min(length, size - offset)`` bytes from ``offset``; only those bytes are in memory."""
        ...


def source_version(source: ByteSource) -> str | None:
    """Size plus mtime or ETag of a source (None when it has no such identity, e.g. bytes in memory)."""
    version = getattr(source, "version", None)
    return version if isinstance(version, str) else None


def _check_range(source: ByteSource, offset: int, length: int) -> int:
    if offset < 0 or length < 0:
        raise ValueError(f"negative offset or length ({offset}, {length})")
    if offset > source.size:
        raise ValueError(f"offset {offset} is past the end ({source.size} bytes)")
    return min(length, source.size - offset)


#: Block size when a local file's range is streamed into a request body (the single-request upload's too).
STREAM_BLOCK = 1024 * 1024


class LocalFileSource:
    """A local file; each read opens, preads and closes, so it is thread-safe and holds no descriptor."""

    #: Reads are cheap (a pread each): a range is streamed in blocks of this size (see iter_range).
    stream_block = STREAM_BLOCK

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.uri = str(self.path)
        self.name = self.path.name
        try:
            st = self.path.stat()
        except FileNotFoundError:
            raise SourceError(self.uri, "file not found") from None
        except OSError as exc:
            raise SourceError(self.uri, f"cannot stat ({exc.strerror})") from None
        if self.path.is_dir():
            raise SourceError(self.uri, "is a directory, not a file")
        if not os.access(self.path, os.R_OK):
            raise SourceError(self.uri, "not readable (permission denied)")
        self.size = st.st_size
        #: What identifies these bytes: size and modification time (a changed file gets another version).
        self.version = f"{st.st_size}:{st.st_mtime_ns}"

    def read_range(self, offset: int, length: int) -> bytes:
        """Read up to ``length`` bytes at ``offset``."""
        want = _check_range(self, offset, length)
        if want == 0:
            return b""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise SourceError(self.uri, f"cannot open ({exc.strerror})") from None
        try:
            chunks: list[bytes] = []
            got = 0
            while got < want:
                chunk = os.pread(fd, want - got, offset + got)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
        finally:
            os.close(fd)
        if got < want:
            raise SourceError(self.uri, f"file shrank while reading (expected {self.size} bytes)")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def __repr__(self) -> str:
        return f"LocalFileSource({self.uri!r}, size={self.size})"


class S3ObjectSource:
    """An S3 object read through one GET kept open from chunk to chunk, pinned to the ETag seen at open.

    A read that goes on where the last one stopped reads on from the same answer; a read elsewhere (a
    resume, a seek) or a body that breaks opens a new GET from that offset to the end (If-Match the ETag,
    and the answer's ETag and size checked: a changed object is an error). One block is in memory."""

    #: Breaks of the response stream one read survives (each reopened from the first byte not yet read).
    read_attempts = 3

    def __init__(self, client: S3Client, bucket: str, key: str) -> None:
        self.client = client
        self.bucket = bucket
        self.key = key
        self.uri = f"s3://{bucket}/{key}"
        self.name = posixpath.basename(key)
        if not key or key.endswith("/"):
            raise SourceError(self.uri, "an S3 source must name an object, not a bucket or prefix")
        try:
            info = head_object(client, bucket, key)
        except ClientError as exc:
            raise SourceError(self.uri, _s3_reason(exc)) from None
        except BotoCoreError as exc:
            raise SourceError(self.uri, f"S3 request failed ({type(exc).__name__})") from None
        self.size = info.size
        self.etag = info.etag
        #: What identifies these bytes: size and ETag (a rewritten object gets another version).
        self.version = f"{info.size}:{info.etag}"
        self._held = HeldStream()

    def read_range(self, offset: int, length: int) -> bytes:
        """Read up to ``length`` bytes at ``offset`` (from the GET kept open when it stands there)."""
        want = _check_range(self, offset, length)
        return b"".join(self.stream_range(offset, want, block=want)) if want else b""

    def stream_range(self, offset: int, length: int, block: int = STREAM_BLOCK) -> Iterator[bytes]:
        """Yield the ``length`` bytes at ``offset``, ``block`` bytes at a time, from the GET kept open when it
        stands at ``offset``, else from a new GET from there to the object's end; it is kept for the next
        range. A stream that breaks mid-body is read on from where it broke by a new GET (read_attempts
        breaks at most); what was yielded is never yielded again."""
        want = _check_range(self, offset, length)
        if want:
            yield from read_through(
                self._held,
                self._open_at,
                offset,
                want,
                block=block,
                size=self.size,
                broken=(IncompleteReadError, ResponseStreamingError, ReadTimeoutError),
                attempts=self.read_attempts,
                fail=lambda reason: SourceError(self.uri, reason),
            )

    def _open_at(self, offset: int) -> Any:
        """A GET from ``offset`` to the end, its answer checked against the object seen at open."""
        try:
            answer = get_range(self.client, self.bucket, self.key, offset, None, etag=self.etag or None)
        except ClientError as exc:
            raise SourceError(self.uri, _s3_reason(exc)) from None
        except BotoCoreError as exc:
            raise SourceError(self.uri, f"S3 request failed ({type(exc).__name__})") from None
        body = answer["Body"]
        changed = _changed(answer, offset, self.size, self.etag)
        if changed:
            body.close()
            raise SourceError(self.uri, f"object changed while reading ({changed})")
        return body

    def close(self) -> None:
        """Close the GET kept open, if any (one read to the end closes it by itself)."""
        self._held.close()

    def __repr__(self) -> str:
        return f"S3ObjectSource({self.uri!r}, size={self.size})"


def _changed(answer: dict[str, Any], offset: int, size: int, etag: str) -> str:
    """Why a GET's answer is not the object seen at open from ``offset`` ('' when it is): never trusted
    blindly, since a store may ignore If-Match."""
    if etag and str(answer.get("ETag", "")) != etag:
        return "ETag no longer matches"
    span = str(answer.get("ContentRange", ""))
    if span:
        first, _, total = span.removeprefix("bytes ").partition("/")
        if total != str(size):
            return f"its size is {total} bytes, not {size}"
        if first.partition("-")[0] != str(offset):
            return f"asked from byte {offset}, answered {span}"
    elif offset != 0 or int(answer.get("ContentLength", -1)) != size:
        return f"a ranged GET from byte {offset} answered {answer.get('ContentLength')} bytes whole"
    return ""


def _s3_reason(exc: ClientError) -> str:
    code = client_error_code(exc)
    if code in ("404", "NoSuchKey", "NotFound"):
        return "object not found"
    if code == "NoSuchBucket":
        return "bucket not found"
    if code in ("403", "AccessDenied", "Forbidden"):
        return "access denied"
    if code in ("412", "PreconditionFailed"):
        return "object changed while reading (ETag no longer matches)"
    return f"S3 error {code or 'unknown'}"


def open_source(uri: str, *, s3: S3Config | None = None, client: S3Client | None = None) -> ByteSource:
    """Open a local path, ``file://`` URI or ``s3://bucket/key`` as a ByteSource.

    http(s) URLs are not byte sources (they travel by import-by-URL): SourceError. ``client`` overrides
    the shared S3 client built from ``s3`` (default: S3Config.from_env()).
    """
    if uri.startswith("s3://"):
        bucket, key = parse_s3_uri(uri)
        return S3ObjectSource(client or shared_s3_client(s3), bucket, key)
    if uri.startswith("file://"):
        return LocalFileSource(file_uri_to_path(uri))
    if uri.startswith(("http://", "https://")):
        raise SourceError(uri, "http(s) URLs are not byte sources; they are uploaded by import-by-URL")
    if "://" in uri:
        raise SourceError(uri, "unsupported scheme (expected a local path, file://, s3:// or http(s)://)")
    return LocalFileSource(uri)


def file_uri_to_path(uri: str) -> str:
    """``file:///a/b`` or ``file://localhost/a/b`` -> ``/a/b`` (percent-decoded)."""
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise SourceError(uri, "file:// URIs on another host are not supported")
    path = unquote(parts.path)
    if not path.startswith("/"):
        raise SourceError(uri, "file:// URI must carry an absolute path")
    return path


def iter_chunks(source: ByteSource, chunk_size: int, *, start: int = 0) -> Iterator[bytes]:
    """Yield the source from ``start`` to the end in chunks of at most ``chunk_size`` bytes."""
    if chunk_size <= 0:
        raise ValueError("chunk_size must be positive")
    offset = start
    while offset < source.size:
        chunk = source.read_range(offset, chunk_size)
        if not chunk:
            break
        yield chunk
        offset += len(chunk)


def iter_range(source: ByteSource, start: int, length: int) -> Iterator[bytes]:
    """Yield the ``length`` bytes at ``start``, read as they are consumed (a request body streamed from disk).

    A source with a ``stream_block`` (a local file) is read in blocks of that size, so reading overlaps
    sending and one block is in memory; one with ``stream_range`` (S3, a download link) streams the range
    from the request it keeps open;
    any other in one read. A source that ends early raises SourceError (a body shorter than its
    Content-Length is never sent).
    """
    stream = getattr(source, "stream_range", None)
    if callable(stream):
        sent = 0
        for data in stream(start, length):
            sent += len(data)
            yield data
        if sent != length:
            raise SourceError(source.uri, f"ended at byte {start + sent}, expected {source.size} bytes")
        return
    block = getattr(source, "stream_block", None)
    step = block if isinstance(block, int) and block > 0 else length
    offset, end = start, start + length
    while offset < end:
        data = source.read_range(offset, min(step, end - offset))
        if not data:
            raise SourceError(source.uri, f"ended at byte {offset}, expected {source.size} bytes")
        offset += len(data)
        yield data


class ByteSourceReader(io.RawIOBase):
    """A read-only, seekable file object over a ByteSource (for libraries that want a stream)."""

    def __init__(self, source: ByteSource, *, start: int = 0) -> None:
        super().__init__()
        self.source = source
        self._pos = start

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.source.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError("negative seek position")
        self._pos = pos
        return pos

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = max(self.source.size - self._pos, 0)
        if size == 0 or self._pos >= self.source.size:
            return b""
        data = self.source.read_range(self._pos, size)
        self._pos += len(data)
        return data

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n
