"""check --playable: proof that every migrated video plays: its item `done` in the ledger, the video `done`
with a `play_link`, and its duration the source's within max(1 s, 2 %); a video that is not is a finding."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from connectors.client import VideoClient
from connectors.errors import VideoApiError
from connectors.media_probe import file_duration, object_duration
from connectors.models import Video
from connectors.s3 import S3Config
from core.item import COMPLETE_STATES, ItemSpec, SourceKind, VideoStatus
from core.platform_keys import platform_key
from tasks.check.compare import CheckLine, Mark
from tasks.check.explain import Applied
from tasks.check.listing import Match

#: The field a line names when the video does not play.
PLAYABLE = "playable"
#: A video's duration agrees with its source's within the larger of these (transcoders round, drop or pad
#: a frame or two; a cut-off transfer loses far more).
LEAST_SECONDS = 1.0
SHARE = 0.02


def tolerance(source_seconds: float) -> float:
    """The largest difference allowed between a video's duration and its source's: max(1 s, 2 %)."""
    return max(LEAST_SECONDS, SHARE * source_seconds)


@dataclass(frozen=True)
class SourceDuration:
    """A source's duration in seconds, or why there is none: `problem` (it should be known: a finding) or
    `unknown` (it cannot be known: said, not a finding)."""

    seconds: float | None = None
    problem: str = ""
    unknown: str = ""


def source_duration(
    spec: ItemSpec, row_seconds: float | None, s3: S3Config | None, *, listed: bool = False
) -> SourceDuration:
    """The source's duration: the inventory's `duration` column first, or the platform's listing (a
    platform source checked as it is: `listed`), else probed from the file or S3 object; an http(s) source
    is not read (its link may be signed and expired)."""
    if row_seconds is not None:
        return SourceDuration(row_seconds)
    if listed:  # api.video's listing says none; Cloudflare's says -1 until it knows
        return SourceDuration(unknown="duration not compared: the platform's listing gives none")
    if platform_key(spec.key) is not None:
        return SourceDuration(problem="the inventory gives no duration for this platform item")
    kind = spec.source_kind
    if kind is SourceKind.URL:
        return SourceDuration(unknown="duration not compared: an http(s) source is not read")
    seconds = file_duration(spec.source) if kind is SourceKind.FILE else object_duration(spec.source, s3)
    if seconds is None:
        return SourceDuration(problem="the source's duration could not be read")
    return SourceDuration(seconds)


def problems(video: Video, state: str | None, source: SourceDuration) -> list[str]:
    """Why a video does not play (empty: it plays): the item's ledger state, the video's status, its
    play_link, its duration against the source's."""
    found: list[str] = []
    if state is not None and state not in COMPLETE_STATES:
        found.append(f"the ledger has the item {state}")
    if video.status != VideoStatus.DONE:
        found.append(f"status {video.status or 'unknown'}")
    if not video.play_link:
        found.append("no play_link")
    if not video.duration or video.duration <= 0:
        found.append("no duration")
    elif source.seconds is not None:
        allowed = tolerance(source.seconds)
        if abs(video.duration - source.seconds) > allowed:
            found.append(
                f"duration {video.duration:.2f} s, the source's {source.seconds:.2f} s"
                f" (more than {allowed:.2f} s apart)"
            )
    if source.problem:
        found.append(source.problem)
    return found


def _with_links(client: VideoClient, video: Video) -> Video:
    """The video with its play_link: one GET when the list answer left it out."""
    if "play_link" in video.model_fields_set and "duration" in video.model_fields_set:
        return video
    try:
        return client.videos.get(video.id)
    except VideoApiError:
        return video  # judged on what the list said


def playable_lines(
    client: VideoClient,
    lines: list[CheckLine],
    matches: list[Match],
    states: Mapping[str, str],
    durations: Mapping[int, float],
    s3: S3Config | None,
    applied: Applied | None = None,
    listed: Collection[str] = (),
) -> list[CheckLine]:
    """The item lines with the verdict added: a video that does not play is `*` with `playable` named
    and why in the note; one that plays says so (`plays: 61.0 s, the source's 61.0 s`). Lines without a
    video (`-`, `!`) are left as they are: they fail already. states: each item's ledger state (empty
    without a ledger). A video whose bytes this ledger's apply changed (a trim, a replace: `applied`) is
    not held to its source's duration. listed: the keys of items a platform's listing gave (their
    durations in `durations` when it said one)."""
    by_key = {m.spec.key: m for m in matches}
    out: list[CheckLine] = []
    for line in lines:
        match = by_key.get(line.key or "")
        if match is None or match.video is None or line.mark not in (Mark.SAME, Mark.DIFFERS, Mark.EXPLAINED):
            out.append(line)
            continue
        spec = match.spec
        row_seconds = durations.get(spec.row) if spec.row is not None else None
        video = _with_links(client, match.video)
        if applied is not None and applied.explains(video, ["duration"]):
            source = SourceDuration(unknown="duration not compared: this ledger's apply changed its bytes")
        else:
            source = source_duration(spec, row_seconds, s3, listed=spec.key in listed)
        found = problems(video, states.get(spec.key), source)
        if found:
            note = "does not play: " + "; ".join(found)
            mark = Mark.DIFFERS
            fields = (*line.fields, PLAYABLE)
        else:
            said = f"{video.duration:.2f} s" + (
                f", the source's {source.seconds:.2f} s" if source.seconds is not None else ""
            )
            note = f"plays: {said}" + (f"; {source.unknown}" if source.unknown else "")
            mark, fields = line.mark, line.fields
        out.append(
            replace(line, mark=mark, fields=fields, note=f"{line.note}; {note}" if line.note else note)
        )
    return out
