"""A streaming S3 multipart writer (flat memory: one part buffered) and clean-up of unfinished uploads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Smallest part S3 accepts (all but the last part); the writer's default part is 8 MiB.
MIN_PART_SIZE = 5 * 1024 * 1024
DEFAULT_PART_SIZE = 8 * 1024 * 1024

__all__ = ["MultipartWriter", "abort_uploads", "open_uploads", "MIN_PART_SIZE", "DEFAULT_PART_SIZE"]


class MultipartWriter:
    """Write one object as a multipart upload: start(), write() as bytes arrive, complete() or abort().

    At most one part (part_size plus the last chunk written) is held in memory; nothing touches the disk.
    The object appears only on complete(): an interrupted writer leaves an unfinished upload, never an object
    that looks complete (abort_uploads() removes it and its parts).
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
    ) -> None:
        if part_size < MIN_PART_SIZE:
            raise ValueError(f"part_size must be at least {MIN_PART_SIZE} bytes (S3's smallest part)")
        self._client = client
        self.bucket = bucket
        self.key = key
        self.part_size = part_size
        self._metadata = dict(metadata or {})
        self._content_type = content_type
        self._buffer = bytearray()
        self._parts: list[dict[str, Any]] = []
        self.upload_id: str | None = None
        self.written = 0

    def start(self) -> str:
        """Create the multipart upload; returns its upload id."""
        answer = self._client.create_multipart_upload(
            Bucket=self.bucket, Key=self.key, Metadata=self._metadata, ContentType=self._content_type
        )
        self.upload_id = str(answer["UploadId"])
        return self.upload_id

    def write(self, data: bytes) -> None:
        """Add bytes; a part is sent as soon as part_size bytes are buffered."""
        if self.upload_id is None:
            self.start()
        self._buffer += data
        self.written += len(data)
        if len(self._buffer) >= self.part_size:
            self._send_part()

    def _send_part(self) -> None:
        number = len(self._parts) + 1
        answer = self._client.upload_part(
            Bucket=self.bucket,
            Key=self.key,
            UploadId=str(self.upload_id),
            PartNumber=number,
            Body=bytes(self._buffer),
        )
        self._parts.append({"PartNumber": number, "ETag": answer["ETag"]})
        self._buffer = bytearray()

    def complete(self) -> None:
        """Send the last part and complete the upload: the object appears whole."""
        if self.upload_id is None:
            self.start()
        if self._buffer or not self._parts:
            self._send_part()
        self._client.complete_multipart_upload(
            Bucket=self.bucket,
            Key=self.key,
            UploadId=str(self.upload_id),
            MultipartUpload={"Parts": self._parts},  # type: ignore[typeddict-item]
        )

    def abort(self) -> None:
        """Abort the upload (its parts are deleted); harmless when it never started or is already gone."""
        if self.upload_id is not None:
            abort_uploads(self._client, self.bucket, self.key, [self.upload_id])
        self._buffer = bytearray()


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
