"""Check: every inventory item against the destination, and the destination's videos no item accounts for."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from videoferry.connectors.client import VideoClient
from videoferry.connectors.errors import NotFoundError, VideoApiError
from videoferry.connectors.ids import try_normal_id
from videoferry.connectors.media_probe import file_duration
from videoferry.connectors.models import Video
from videoferry.connectors.retry import describe_failure
from videoferry.connectors.s3 import S3Config
from videoferry.core.item import ItemSpec, SourceKind
from videoferry.tasks.check.compare import (
    CheckLine,
    Mark,
    SourceFacts,
    compare_item,
    directly_in,
    error_line,
    extra_line,
    missing_line,
    needs_md5,
    original_asset,
)
from videoferry.tasks.check.explain import Applied, explained_line
from videoferry.tasks.check.listing import Listing, Match, match_items
from videoferry.tasks.check.source import source_facts

#: Fields a comparison may need that a list answer can leave out (spec 2.1: tags are "returned by get").
_COMPARED = (
    "description",
    "tags",
    "privacy_type",
    "privacy_domains",
    "chapters",
    "additional_materials",
    "assets",
)


@dataclass
class CheckSettings:
    """How deep a check goes: hash downloads when the service gives no md5; durations by inventory row."""

    download_md5: bool = False
    s3: S3Config | None = None
    durations: Mapping[int, float] = field(default_factory=dict)
    workers: int = 4
    oldest: bool = False  #: several videos fit an item alone with its title: take the oldest (--adopt)
    #: what this ledger's apply did (differences it explains are `~`, not counted)
    applied: Applied = field(default_factory=Applied)
    one_way: bool = False  #: --one-way: no `+` lines (videos only in the service are not looked for)


@dataclass
class CheckResult:
    """The item lines (inventory order), the lines of videos no item accounts for, and each item's match."""

    items: list[CheckLine]
    extras: list[CheckLine]
    matches: list[Match]
    get_calls: int = 0
    outside: int = 0  #: listed videos out of the `+` scope (another folder of a checked project)


class _Sizes:
    """Source sizes, read once per item and only when matching needs them."""

    def __init__(self, s3: S3Config | None) -> None:
        self._s3 = s3
        self._known: dict[str, SourceFacts] = {}
        self._lock = threading.Lock()

    def __call__(self, spec: ItemSpec) -> int | None:
        with self._lock:
            if spec.key not in self._known:
                self._known[spec.key] = source_facts(spec, want_md5=False, s3=self._s3)
            return self._known[spec.key].size


def _asks(spec: ItemSpec) -> set[str]:
    """The compared fields this item's row gives a value for (assets always: the bytes)."""
    asked = {"assets"}
    if spec.description:
        asked.add("description")
    if spec.tags:
        asked.add("tags")
    if spec.privacy_type:
        asked.add("privacy_type")
    if spec.privacy_domains:
        asked.add("privacy_domains")
    if spec.chapters:
        asked.add("chapters")
    if spec.attachments:
        asked.add("additional_materials")
    return asked


def _full(client: VideoClient, spec: ItemSpec, video: Video) -> tuple[Video | None, int]:
    """The video with every field this item compares: one GET when the list answer left one out."""
    missing = [f for f in _COMPARED if f in _asks(spec) and f not in video.model_fields_set]
    if not missing:
        return video, 0
    try:
        return client.videos.get(video.id), 1
    except NotFoundError:
        return None, 1


def _item_line(
    client: VideoClient, match: Match, cfg: CheckSettings, ledger_id: str | None
) -> tuple[CheckLine, int]:
    spec = match.spec
    if match.video is None:
        if match.ambiguous or match.error:
            return error_line(spec, match.problem), 0
        deleted = cfg.applied.deleted.get(try_normal_id(ledger_id) or ledger_id) if ledger_id else None
        if deleted is not None:
            note = f"{match.problem}: deleted by this ledger's {deleted.says()}"
            return CheckLine(Mark.EXPLAINED, spec.key, spec.row, spec.title, ledger_id, (), note), 0
        return missing_line(spec, match.problem), 0
    try:
        video, gets = _full(client, spec, match.video)
    except VideoApiError as exc:
        return error_line(spec, f"the video could not be read ({describe_failure(exc)})", match.video.id), 1
    if video is None:
        return missing_line(spec, "the video was deleted while being checked", match.video.id), gets
    facts = source_facts(spec, want_md5=needs_md5(video, cfg.download_md5), s3=cfg.s3)
    downloaded: str | None = None
    failed: str | None = None
    asset = original_asset(video)
    if cfg.download_md5 and asset is not None and not asset.md5 and facts.error is None:
        if asset.download_link:
            try:
                _, downloaded = client.videos.download_digest(asset.download_link)
            except VideoApiError as exc:
                failed = f"{type(exc).__name__} {exc.status or ''}".strip()
        else:
            failed = "the original has no download link"
    duration = cfg.durations.get(spec.row) if spec.row is not None else None
    if duration is None and asset is None and spec.source_kind is SourceKind.FILE:
        duration = file_duration(spec.source)  # no original to compare bytes with: the source's duration
    line = compare_item(
        spec, video, facts, downloaded_md5=downloaded, download_error=failed, duration=duration
    )
    line = explained_line(line, video, cfg.applied)
    if match.how != "ledger":
        line = CheckLine(
            line.mark, line.key, line.row, line.title, line.video_id, line.fields,
            _note(line.note, f"found by {match.how}"), line.bytes_by,
        )  # fmt: skip
    return line, gets


def _note(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def check_items(
    client: VideoClient,
    specs: list[ItemSpec],
    dest: Listing,
    ledger_ids: Mapping[str, str],
    owners: Mapping[str, str],
    cfg: CheckSettings,
) -> CheckResult:
    """Match every item to its video and compare them (sources read and hashed by cfg.workers threads)."""
    matches = match_items(client, specs, dest, ledger_ids, owners, _Sizes(cfg.s3), oldest=cfg.oldest)
    with concurrent.futures.ThreadPoolExecutor(max_workers=cfg.workers, thread_name_prefix="check") as pool:
        done = list(pool.map(lambda m: _item_line(client, m, cfg, ledger_ids.get(m.spec.key)), matches))
    extras, outside = ([], 0) if cfg.one_way else _extras(matches, dest, owners, cfg.applied, specs)
    result = CheckResult([line for line, _ in done], extras, matches, sum(gets for _, gets in done))
    result.outside = outside
    return result


def _extras(
    matches: list[Match],
    dest: Listing,
    owners: Mapping[str, str],
    applied: Applied,
    specs: list[ItemSpec],
) -> tuple[list[CheckLine], int]:
    """The `+` lines: videos directly in a parent the inventory writes to that no item accounts for (`~`
    when this ledger's apply made them); and how many listed videos were out of that scope (in another
    folder of a checked project)."""
    accounted = {m.video.id for m in matches if m.video is not None}
    accounted.update(vid for m in matches for vid in m.ambiguous)
    parents = {s.parent_id for s in specs}
    extras: list[CheckLine] = []
    outside = 0
    for vid, video in dest.videos.items():
        if vid in accounted:
            continue
        if not any(directly_in(video, parent) for parent in parents):
            outside += 1
            continue
        made = applied.made.get(vid)
        if made is not None:
            note = f"made by this ledger's {made.says()}"
            extras.append(CheckLine(Mark.EXPLAINED, None, None, video.title, video.id, (), note))
            continue
        owner = owners.get(vid)
        note = f"the ledger's {owner}, not in this inventory" if owner else "no item accounts for it"
        extras.append(extra_line(video, note))
    return extras, outside
