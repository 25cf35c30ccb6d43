"""A streaming S3 multipart writer (parts sent while the next arrive, memory bounded); unfinished uploads."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Final, cast

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Smallest part S3 accepts (all but the last part); the writer's default part is 8 MiB.
MIN_PART_SIZE = 5 * 1024 * 1024
DEFAULT_PART_SIZE = 8 * 1024 * 1024
#: Parts being sent at once by default: the bytes keep arriving while they go. boto3's transfer manager sends
#: 10; here 10 was no faster (512 MiB from the emulator into moto, alternating rounds against boto3's threaded
#: copy, before PART_CHECKSUM: 0.78 archive / 0.76 backup with 10, 0.81 / 0.86 with 4) and holds 6 more part
#: buffers (issue 30). With PART_CHECKSUM and 4: 0.97 / 1.00 (bench/RESULTS.md).
DEFAULT_IN_FLIGHT = 4
#: The checksum S3 keeps of each part and checks on arrival (botocore computes it as it sends a part),
#: declared when the upload is created, as boto3's own transfer manager does: with none declared, S3 (and
#: moto) make a full-object CRC64NVME of the whole object at completion (moto: 2 s more a 512 MiB copy).
PART_CHECKSUM: Final = "CRC32"

__all__ = [
    "MultipartWriter",
    "abort_uploads",
    "open_uploads",
    "MIN_PART_SIZE",
    "DEFAULT_PART_SIZE",
    "DEFAULT_IN_FLIGHT",
]


class MultipartWriter:
    """Write one object as a multipart upload: start(), write() as bytes arrive, complete() or abort().

    A full part is handed to one of `in_flight` threads and sent while write() takes the next bytes, so a
    download feeding write() and the upload overlap. Memory is bounded whatever the object's size: the parts
    are filled into at most `in_flight + 1` buffers of `part_size` bytes, reused once their part is sent
    (the next part fills while `in_flight` are out; once it is full, write() waits for whichever part ends
    first), so after the first parts the writer
    allocates nothing more (new 8 MiB blocks for every part let glibc's heap grow with the object's size).
    Nothing touches the disk. The object appears only on complete(): an interrupted writer leaves an
    unfinished upload, never an object that looks complete (abort_uploads() removes it and its parts). A part
    that failed is raised by the next write() or complete().
    """

    def __init__(
        self,
        client: S3Client,
        bucket: str,
        key: str,
        *,
        part_size: int = DEFAULT_PART_SIZE,
        metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
        in_flight: int = DEFAULT_IN_FLIGHT,
    ) -> None:
        if part_size < MIN_PART_SIZE:
            raise ValueError(f"part_size must be at least {MIN_PART_SIZE} bytes (S3's smallest part)")
        if in_flight < 1:
            raise ValueError("in_flight must be at least 1")
        self._client = client
        self.bucket = bucket
        self.key = key
        self.part_size = part_size
        self.in_flight = in_flight
        self._metadata = dict(metadata or {})
        self._content_type = content_type
        self._part: bytearray | None = None  # the part being filled (part_size bytes, `_filled` of them used)
        self._filled = 0
        self._free: list[bytearray] = []  # buffers whose part was sent, to be filled again
        self.buffers = 0  #: part buffers allocated so far (at most in_flight + 1)
        self._parts: list[dict[str, Any]] = []
        self._sending: list[tuple[Future[dict[str, Any]], bytearray]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._next_part = 1
        self.upload_id: str | None = None
        self.written = 0

    def start(self) -> str:
        """Create the multipart upload; returns its upload id."""
        answer = self._client.create_multipart_upload(
            Bucket=self.bucket,
            Key=self.key,
            Metadata=self._metadata,
            ContentType=self._content_type,
            ChecksumAlgorithm=PART_CHECKSUM,
        )
        self.upload_id = str(answer["UploadId"])
        return self.upload_id

    def write(self, data: bytes) -> None:
        """Add bytes; each full part (part_size bytes) is handed to a sending thread at once."""
        if self.upload_id is None:
            self.start()
        self.written += len(data)
        view = memoryview(data)
        while view:
            if self._part is None:
                self._part = self._buffer()
            n = min(len(view), self.part_size - self._filled)
            self._part[self._filled : self._filled + n] = view[:n]
            self._filled += n
            view = view[n:]
            if self._filled == self.part_size:
                full, self._part, self._filled = self._part, None, 0
                self._send(full, full)

    @property
    def parts_in_memory(self) -> int:
        """Parts handed to the threads and not yet sent (their bytes are held until then)."""
        return sum(1 for f, _ in self._sending if not f.done())

    def _buffer(self) -> bytearray:
        """A part buffer: one whose part was sent, else a new one (the first in_flight + 1 parts). It does not
        wait for a sending thread: the next part fills while in_flight are out (_send waits, once it is full).
        """
        self._collect(done=True)
        if self._free:
            return self._free.pop()
        self.buffers += 1
        return bytearray(self.part_size)

    def _make_room(self) -> None:
        """Take in the parts already sent (a failed one is raised here), and while in_flight are out wait
        for whichever ends first (not the oldest: one slow part does not hold the others' slots)."""
        self._collect(done=True)
        while len(self._sending) >= self.in_flight:
            wait([future for future, _ in self._sending], return_when=FIRST_COMPLETED)
            self._collect(done=True)

    def _collect(self, *, done: bool) -> None:
        """Take in the parts sent: the finished ones (done=True), else all of them (waiting for each)."""
        kept: list[tuple[Future[dict[str, Any]], bytearray]] = []
        for future, buffer in self._sending:
            if done and not future.done():
                kept.append((future, buffer))
                continue
            self._parts.append(future.result())
            self._free.append(buffer)
        self._sending = kept

    def _send(self, body: bytes | bytearray, buffer: bytearray) -> None:
        self._make_room()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.in_flight, thread_name_prefix="s3-part")
        number = self._next_part
        self._next_part += 1
        self._sending.append((self._pool.submit(self._upload_part, number, body), buffer))

    def _upload_part(self, number: int, body: bytes | bytearray) -> dict[str, Any]:
        answer = self._client.upload_part(  # botocore sends a bytearray as it sends bytes (no copy)
            Bucket=self.bucket,
            Key=self.key,
            UploadId=str(self.upload_id),
            PartNumber=number,
            Body=cast(bytes, body),
            ChecksumAlgorithm=PART_CHECKSUM,
        )
        part = {"PartNumber": number, "ETag": answer["ETag"]}
        if answer.get("ChecksumCRC32"):  # completing a checksummed upload names each part's checksum
            part["ChecksumCRC32"] = answer["ChecksumCRC32"]
        return part

    def _drain(self) -> None:
        self._collect(done=False)

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def complete(self) -> None:
        """Send the last part, wait for every part, and complete the upload: the object appears whole."""
        if self.upload_id is None:
            self.start()
        try:
            if self._filled or self._next_part == 1:
                last = self._part if self._part is not None else bytearray()
                self._send(bytes(memoryview(last)[: self._filled]), last)
                self._part, self._filled = None, 0
            self._drain()
        finally:
            self._close_pool()
        self._free.clear()
        parts = sorted(self._parts, key=lambda p: int(p["PartNumber"]))
        self._client.complete_multipart_upload(
            Bucket=self.bucket,
            Key=self.key,
            UploadId=str(self.upload_id),
            MultipartUpload={"Parts": parts},  # type: ignore[typeddict-item]
        )

    def abort(self) -> None:
        """Stop sending (parts not yet sent are dropped) and abort the upload (its parts are deleted);
        harmless when it never started or is already gone."""
        for future, _ in self._sending:
            future.cancel()
        self._close_pool()
        self._sending.clear()
        if self.upload_id is not None:
            abort_uploads(self._client, self.bucket, self.key, [self.upload_id])
        self._part, self._filled = None, 0
        self._free.clear()


def open_uploads(client: S3Client, bucket: str, key: str) -> list[str]:
    """Upload ids of the unfinished multipart uploads of exactly this key."""
    ids: list[str] = []
    paginator = client.get_paginator("list_multipart_uploads")
    for page in paginator.paginate(Bucket=bucket, Prefix=key):
        ids += [str(u["UploadId"]) for u in page.get("Uploads", []) if u.get("Key") == key]
    return ids


def abort_uploads(client: S3Client, bucket: str, key: str, upload_ids: list[str] | None = None) -> int:
    """Abort the given (default: every unfinished) multipart uploads of a key; how many were aborted."""
    ids = open_uploads(client, bucket, key) if upload_ids is None else upload_ids
    aborted = 0
    for upload_id in ids:
        try:
            client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
            aborted += 1
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("NoSuchUpload", "404"):
                raise
    return aborted
