"""Where copies go (archive, backup): an S3 prefix (multipart, streamed) or a private local directory."""

from __future__ import annotations

import hashlib
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from videoferry.connectors.s3 import S3Config, parse_s3_uri, shared_s3_client
from videoferry.connectors.s3_multipart import DEFAULT_PART_SIZE, MultipartWriter, abort_uploads
from videoferry.tasks.private_files import open_private, private_dir, write_private

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["Destination", "LocalDestination", "S3Destination", "ObjectWriter", "open_destination"]

#: Object metadata that carries the md5 of a copied file (an S3 multipart ETag is not an md5).
MD5_META = "md5"
#: A local destination's folders and files are the owner's only (tasks/private_files.py): copies hold titles,
#: chats, viewers' data.


class ObjectWriter(ABC):
    """One object being written: write() as bytes arrive, then commit() (appears whole) or abort()."""

    @abstractmethod
    def write(self, data: bytes) -> None: ...

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def abort(self) -> None: ...


#: Called right before a write takes effect; what it raises refuses the write.
Guard = Callable[[], None]


def _no_guard() -> None:
    return None


_guarding = threading.local()  #: the guard of the destination write this thread is making
_HOOK_ID = "videoferry-destination-guard"


def _before_send(**_: Any) -> None:
    """botocore's before-send (signed, about to leave): the guard of this thread's destination write."""
    guard = getattr(_guarding, "guard", None)
    if guard is not None:
        guard()


@contextmanager
def _guarded(client: S3Client, guard: Guard) -> Iterator[None]:
    """Requests this thread sends through client meanwhile pass guard() right before they leave (parts sent
    by other threads do not: they show nothing until the completing request, which does)."""
    client.meta.events.register("before-send.s3", _before_send, unique_id=_HOOK_ID)
    _guarding.guard = guard
    try:
        yield
    finally:
        _guarding.guard = None


class Destination(ABC):
    """A destination of copies; keys are '/'-separated paths under its root.

    guard() is called right before anything takes effect there (an object committed, written whole or
    deleted; in S3 as the signed request leaves: botocore's before-send); what it raises refuses it: a remote
    ledger's lease that may have ended (the runners set it to the run's guard, flows/job.Run.guard), so a run
    that may no longer hold its ledger changes nothing here.
    """

    uri: str
    guard: Guard = staticmethod(_no_guard)

    @abstractmethod
    def key(self, *parts: str) -> str:
        """The full key (S3) or path (local) of a relative path."""

    @abstractmethod
    def source(self, key: str) -> str:
        """How a key is named from outside: s3://bucket/key, or the absolute path."""

    @abstractmethod
    def stat(self, key: str) -> tuple[int, str | None] | None:
        """(size, md5 when known) of a complete object, None when absent."""

    @abstractmethod
    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        """Write a small object whole (sidecars, manifests); it appears only complete."""

    @abstractmethod
    def writer(self, key: str, md5: str | None) -> ObjectWriter:
        """A streaming writer for a large object; md5 (when known beforehand) is kept with it."""

    @abstractmethod
    def discard_partial(self, key: str) -> int:
        """Remove what an interrupted writer left for this key (unfinished uploads, .part files)."""

    @abstractmethod
    def delete(self, key: str) -> bool:
        """Remove a complete object; False when it was not there."""


class _S3Writer(ObjectWriter):
    def __init__(self, upload: MultipartWriter, client: S3Client, guard: Guard) -> None:
        self._upload = upload
        self._client = client
        self._guard = guard

    def write(self, data: bytes) -> None:
        self._upload.write(data)

    def commit(self) -> None:
        with _guarded(self._client, self._guard):  # the completing request, once the last parts are sent
            self._upload.complete()

    def abort(self) -> None:
        self._upload.abort()


class S3Destination(Destination):
    """s3://bucket/prefix/: large objects by multipart upload (parts in flight while bytes arrive), small
    ones by put_object."""

    def __init__(self, uri: str, client: S3Client, *, part_size: int = DEFAULT_PART_SIZE) -> None:
        self.bucket, prefix = parse_s3_uri(uri)
        self.prefix = prefix.strip("/")
        self.uri = f"s3://{self.bucket}/{self.prefix + '/' if self.prefix else ''}"
        self.client = client
        self.part_size = part_size

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def source(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def stat(self, key: str) -> tuple[int, str | None] | None:
        try:
            answer = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return int(answer["ContentLength"]), (answer.get("Metadata") or {}).get(MD5_META)

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
        with _guarded(self.client, self.guard):
            self.client.put_object(
                Bucket=self.bucket, Key=key, Body=data, ContentType=content_type, Metadata={MD5_META: md5}
            )

    def writer(self, key: str, md5: str | None) -> ObjectWriter:
        metadata = {MD5_META: md5} if md5 else {}
        upload = MultipartWriter(self.client, self.bucket, key, part_size=self.part_size, metadata=metadata)
        upload.start()
        return _S3Writer(upload, self.client, self.guard)

    def discard_partial(self, key: str) -> int:
        return abort_uploads(self.client, self.bucket, key)

    def delete(self, key: str) -> bool:
        if self.stat(key) is None:
            return False
        with _guarded(self.client, self.guard):
            self.client.delete_object(Bucket=self.bucket, Key=key)
        return True


def _private_dirs(path: Path, root: Path) -> None:
    """path's folders below root private (created 0700, or tightened: tasks/private_files.private_dir)."""
    private_dir(root, *path.relative_to(root).parts)


class _LocalWriter(ObjectWriter):
    def __init__(self, final: Path, root: Path, guard: Guard) -> None:
        self._guard = guard
        self._final = final
        self._part = final.with_name(final.name + ".part")
        _private_dirs(final.parent, root)
        self._file = open_private(self._part)  # closed by commit() / abort()

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def commit(self) -> None:
        self._guard()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self._part, self._final)

    def abort(self) -> None:
        self._file.close()
        self._part.unlink(missing_ok=True)


class LocalDestination(Destination):
    """A local directory: a file is written to <name>.part and renamed only once complete.

    Everything it writes holds personal data (recordings, chat: user names and messages; QoS: client IPs;
    backups' titles): files 0600, the folders of the layout below the root 0700, tightened when they exist
    (tasks/private_files.py); the root is created 0700 when missing.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser().resolve()
        self.uri = str(self.root)

    def _ensure_root(self) -> None:
        private_dir(self.root)  # created 0700 when missing; a folder a person named is left as it is

    def key(self, *parts: str) -> str:
        return str(self.root.joinpath(*parts))

    def source(self, key: str) -> str:
        return key

    def stat(self, key: str) -> tuple[int, str | None] | None:
        path = Path(key)
        if not path.is_file():
            return None
        digest = hashlib.md5(usedforsecurity=False)
        with open(path, "rb") as handle:
            while chunk := handle.read(1024 * 1024):
                digest.update(chunk)
        return path.stat().st_size, digest.hexdigest()

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        self._ensure_root()
        path = Path(key)
        _private_dirs(path.parent, self.root)
        self.guard()
        write_private(path, data)

    def writer(self, key: str, md5: str | None) -> ObjectWriter:
        self._ensure_root()
        return _LocalWriter(Path(key), self.root, self.guard)

    def discard_partial(self, key: str) -> int:
        part = Path(key + ".part")
        if part.exists():
            part.unlink()
            return 1
        return 0

    def delete(self, key: str) -> bool:
        path = Path(key)
        if not path.is_file():
            return False
        self.guard()
        path.unlink()
        return True


def open_destination(
    to: str, *, s3: S3Config | None = None, part_size: int = DEFAULT_PART_SIZE
) -> Destination:
    """s3://bucket/prefix/ or a local directory."""
    if to.startswith("s3://"):
        return S3Destination(to, shared_s3_client(s3), part_size=part_size)
    return LocalDestination(to)
