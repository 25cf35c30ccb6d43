"""The errors of a tus upload (`TusError`, `TusEndpointGoneError`): never naming the endpoint."""

from __future__ import annotations

from typing import Any

from connectors.errors import RetryHint, VideoApiError

__all__ = ["TusEndpointGoneError", "TusError", "maybe_offset_refusal"]


class TusError(VideoApiError):
    """An upload to the endpoint failed. Never names the endpoint (a capability): says "upload endpoint"."""

    retry_hint = RetryHint.YES

    def __init__(
        self, message: str, *, status: int | None = None, offset: int | None = None, retryable: bool = True
    ) -> None:
        #: The last offset the server acknowledged, when known (persist it; the next run resumes by HEAD).
        self.offset = offset
        self._retryable = retryable
        super().__init__(message, status=status, operation="tus_upload")

    @property
    def retryable(self) -> bool:
        """True when a later attempt (a new upload() call) may succeed."""
        return self._retryable

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled whole (a Dask worker's failure reaches the coordinator with its status and offset)."""
        return _rebuild_tus_error, (type(self), self.message, self.status, self.offset, self._retryable)


class TusEndpointGoneError(TusError):
    """The endpoint answered 403/404/410: it expired or never existed; a new upload session is needed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, status=status, retryable=False)


def maybe_offset_refusal(error: TusError) -> bool:
    """A 4xx a server might answer a PATCH at a wrong offset with (not gone, not too long: 413)."""
    status = error.status or 0
    return 400 <= status < 500 and status != 413 and not isinstance(error, TusEndpointGoneError)


def _rebuild_tus_error(
    cls: type[TusError], message: str, status: int | None, offset: int | None, retryable: bool
) -> TusError:
    error = cls.__new__(cls)
    TusError.__init__(error, message, status=status, offset=offset, retryable=retryable)
    return error
