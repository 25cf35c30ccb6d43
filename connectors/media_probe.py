"""A local media file's duration, read from its container with PyAV (None when it is not media)."""

from __future__ import annotations

from pathlib import Path


def file_duration(path: str | Path) -> float | None:
    """Seconds of a local media file by its container (or its longest stream); None when unreadable."""
    import av

    try:
        with av.open(str(path)) as container:
            if container.duration is not None:
                return float(container.duration / av.time_base)
            spans = [
                float(s.duration * s.time_base) for s in container.streams if s.duration and s.time_base
            ]
            return max(spans) if spans else None
    except (av.FFmpegError, OSError):
        return None
