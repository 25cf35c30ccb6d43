"""What `migrate --dry-run` says of a platform source or a YouTube Takeout: per target folder the videos,
bytes and duration still to migrate and those already done, and what the service cannot carry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from videoferry.tasks.migrate.plan import Plan, Step
from videoferry.tasks.migrate.report import size_text

#: What no migration from a platform carries, said once in every dry run of one (spec: no call sets a
#: video's poster or its subtitles).
NOT_CARRIED = (
    "posters and captions are not carried: the service's API shows no way to set a video's poster or"
    " subtitles (--captions DIR attaches a platform video's captions as additional materials)"
)


@dataclass
class _Folder:
    videos: int = 0
    to_do: int = 0
    done: int = 0
    size: int = 0
    unknown_size: int = 0
    seconds: float = 0.0


def source_lines(plan: Plan, steps: Sequence[Step]) -> list[str]:
    """The dry run's lines about a platform source (none for an inventory file or an S3 prefix)."""
    origins = plan.inventory.origins
    if plan.inventory.format != "platform":
        return []
    folders: dict[str, _Folder] = {}
    for step in steps:
        folder = folders.setdefault(step.spec.parent_id, _Folder())
        folder.videos += 1
        if step.verb == "skip":
            folder.done += 1
            continue
        folder.to_do += 1
        origin = origins.get(step.spec.key)
        if origin is None or origin.size is None:
            folder.unknown_size += 1
        else:
            folder.size += origin.size
        if origin is not None and origin.duration is not None:
            folder.seconds += origin.duration
    lines = []
    for parent, f in sorted(folders.items()):
        unknown = f" ({f.unknown_size} of unknown size)" if f.unknown_size else ""
        lines.append(
            f"into {parent}: {f.videos} videos, {f.to_do} to migrate ({size_text(f.size)}{unknown},"
            f" {_duration(f.seconds)}), {f.done} already done"
        )
    return [*lines, NOT_CARRIED]


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d} long" if hours else f"{minutes}:{secs:02d} long"
