"""Trims and chapters checked against the video's duration before any call (dry run and run alike)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from videoferry.connectors.errors import AuthError, VideoApiError
from videoferry.core.operation import ChaptersParams, CutParams, OperationSpec

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient
    from videoferry.connectors.models import Video

#: Seconds a trim or a chapter may reach past the duration the service reports (its rounding).
SLACK = 0.05


class Durations:
    """The duration of each video a check needs: from a listing already made, else one GET (None when the
    service does not say, or the GET fails: the service then judges the call itself)."""

    def __init__(self, client: VideoClient) -> None:
        self.client = client
        self.known: dict[str, float | None] = {}

    def learn(self, videos: Iterable[Video]) -> None:
        """Durations a listing gave (no call)."""
        for video in videos:
            self.known.setdefault(video.id, video.duration)

    def of(self, video_id: str) -> float | None:
        """The video's duration in seconds, or None when it is not known."""
        if video_id not in self.known:
            try:
                self.known[video_id] = self.client.videos.get(video_id).duration
            except AuthError:
                raise
            except VideoApiError:
                self.known[video_id] = None
        return self.known[video_id]


def needs_duration(spec: OperationSpec) -> bool:
    """Whether the operation has times the video's duration bounds (a cut's trim, chapters)."""
    params = spec.params
    return (isinstance(params, CutParams) and bool(params.trim)) or (
        isinstance(params, ChaptersParams) and bool(params.items)
    )


def past_the_end(spec: OperationSpec, video_id: str, duration: float) -> tuple[str, str] | None:
    """(field, reason) when a trim range or a chapter lies past the video's end; None when all fit."""
    params = spec.params
    end = f"the video {video_id} lasts {duration:g} s"
    if isinstance(params, CutParams):
        for r in params.trim:
            length = r.length or 0.0
            stop = r.start + length
            if r.start >= duration or stop > duration + SLACK:
                return "trim", f"trim from {r.start:g} s for {length:g} s ends at {stop:g} s, but {end}"
    if isinstance(params, ChaptersParams):
        for chapter in params.items:
            if chapter.time > duration + SLACK:
                return "chapters", f"chapter {chapter.title!r} starts at {chapter.time:g} s, but {end}"
    return None
