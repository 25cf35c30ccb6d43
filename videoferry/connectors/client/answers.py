"""Reading 2xx answers: the `data` member and a video in it, or ResponseFormatError."""

from __future__ import annotations

from typing import Any

from videoferry.connectors.errors import ResponseFormatError
from videoferry.connectors.models import Video

__all__ = ["data_of", "video_of"]


def data_of(body: Any, operation: str, *, bare: bool = False) -> Any:
    """The answer's `data` member (ResponseFormatError when the body has none).

    With bare=True a bare object (no envelope) is taken as the data itself.
    """
    if isinstance(body, dict):
        if "data" in body:
            return body["data"]
        if bare and body:
            return body
    raise ResponseFormatError("answer has no data", operation=operation)


def video_of(body: Any, operation: str) -> Video:
    """The video in the answer's `data` (ResponseFormatError when it is not one)."""
    data = data_of(body, operation)
    try:
        return Video.model_validate(data)
    except Exception as exc:  # pydantic.ValidationError: the shape is not a video
        raise ResponseFormatError(
            f"answer is not a video ({type(exc).__name__})", operation=operation
        ) from None
