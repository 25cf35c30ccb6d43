"""Chaos checks: requests inside the limits, never a duplicate (by ids and stored bytes), exactly one each."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videoferry.connectors.ids import try_normal_id
from videoferry.core.tidy import same_tags, same_title
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger

#: Published limits of the service (spec section 8); the chaos runs keep them.
PER_SECOND = 10
PER_MINUTE = 300
#: The service's rule: after a 429 nothing is sent for 5 s (spec section 8); the client learns from the first
#: 429 of an upload address that the service counts upload requests, so they count from that pause's end.
PAUSE_AFTER_429 = 5.0
#: Item end states that need an error code and message.
FAILED_STATES = ("failed", "error", "aborted")
END_STATES = ("finished", *FAILED_STATES)


# -- rate ----------------------------------------------------------------------------------------------


def max_in_window(times: Sequence[float], window: float) -> int:
    """Most times inside any half-open window [t, t + window) (two pointers over sorted times)."""
    ordered = sorted(times)
    best = 0
    left = 0
    for right, moment in enumerate(ordered):
        while moment - ordered[left] >= window:
            left += 1
        best = max(best, right - left + 1)
    return best


def is_upload_request(entry: dict[str, Any]) -> bool:
    """A request to an upload address (tus HEAD/PATCH), not an API call."""
    return str(entry["path"]).startswith("/upload/")


def is_api_request(entry: dict[str, Any]) -> bool:
    """A request sent with the token: the API host, and /v2 (init, single uploads) on the upload host."""
    return not is_upload_request(entry) and (entry["host"] == "api" or str(entry["path"]).startswith("/v2/"))


def counted_requests(
    entries: Iterable[dict[str, Any]], *, uploads_counted: bool = False, runs: Sequence[float] = ()
) -> list[dict[str, Any]]:
    """The requests the limits apply to, 429s included (a refused request was still sent).

    API calls always. Upload requests only when the service counts them (the tus-rate-limited variant), and
    only once the client can know: from the end of the 5 s pause after the first 429 an upload address gave
    in each run (`runs`: the start times of the runs; a new process learns anew). Before that they are not
    API calls by the spec, and a client has no way to know better.
    """
    ordered = sorted(entries, key=lambda r: r["time"])
    counted = [r for r in ordered if is_api_request(r)]
    if not uploads_counted:
        return counted
    starts = sorted(runs) or [ordered[0]["time"] if ordered else 0.0]
    learned: list[float] = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else float("inf")
        first = next(
            (
                r["time"]
                for r in ordered
                if start <= r["time"] < end and is_upload_request(r) and r["status"] == 429
            ),
            None,
        )
        if first is not None and first + PAUSE_AFTER_429 < end:
            learned.append(first + PAUSE_AFTER_429)
            learned.append(end)
    uploads = [
        r
        for r in ordered
        if is_upload_request(r)
        and any(learned[i] <= r["time"] < learned[i + 1] for i in range(0, len(learned), 2))
    ]
    return sorted(counted + uploads, key=lambda r: r["time"])


def busiest_window(entries: Sequence[dict[str, Any]], window: float) -> list[dict[str, Any]]:
    """The entries of the busiest half-open window of `window` seconds (for failure messages)."""
    ordered = sorted(entries, key=lambda r: r["time"])
    best: tuple[int, int] = (0, 0)
    left = 0
    for right, entry in enumerate(ordered):
        while entry["time"] - ordered[left]["time"] >= window:
            left += 1
        if right - left + 1 > best[1] - best[0]:
            best = (left, right + 1)
    return ordered[best[0] : best[1]]


@dataclass
class RateFigures:
    """The busiest second and minute seen in the request log."""

    calls: int
    per_second: int
    per_minute: int
    refused_429: int
    uploads: int = 0
    busiest_second: list[dict[str, Any]] = field(default_factory=list)

    def assert_inside_limits(self) -> None:
        """The service's published limits were never exceeded."""
        shown = [
            (
                round(r["time"], 3),
                r["method"],
                "/upload/…" if is_upload_request(r) else r["path"][:20],
                r["status"],
            )
            for r in self.busiest_second
        ]
        assert self.per_second <= PER_SECOND, f"{self.per_second} counted requests in one second: {shown}"
        assert self.per_minute <= PER_MINUTE, f"{self.per_minute} counted requests in one minute"


def rate_figures_of(entries: Sequence[dict[str, Any]], **how: Any) -> RateFigures:
    """The figures of a request log (see counted_requests for `how`)."""
    counted = counted_requests(entries, **how)
    times = [r["time"] for r in counted]
    return RateFigures(
        calls=len(times),
        per_second=max_in_window(times, 1.0),
        per_minute=max_in_window(times, 60.0),
        refused_429=sum(1 for r in counted if r["status"] == 429),
        uploads=sum(1 for r in counted if is_upload_request(r)),
        busiest_second=busiest_window(counted, 1.0),
    )


def rate_figures(
    control: EmulatorControl,
    ws: Workspace,
    *,
    variants: Sequence[str] = (),
    runs: Sequence[float] = (),
) -> RateFigures:
    """Count the requests of a workspace that its limits apply to in the tightest 1 s and 60 s windows."""
    return rate_figures_of(
        control.requests(ws.workspace_id), uploads_counted="tus-rate-limited" in variants, runs=runs
    )


# -- the ledger and the service's videos ---------------------------------------------------------------


def ledger_items(path: Path) -> list[Any]:
    """Every item of a ledger (read-only open)."""
    ledger = Ledger.open(path, create=False)
    try:
        return ledger.items()
    finally:
        ledger.close()


def file_md5(path: Path) -> str:
    """md5 of a file's bytes (what the service's md5 of the stored bytes must equal)."""
    return hashlib.md5(path.read_bytes()).hexdigest()


def attribute_videos(
    videos: Sequence[dict[str, Any]], items: Sequence[Any], md5_by_source: dict[str, str]
) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """({item key: [video ids]}, videos no item can own): how the service's videos map to the ledger's items.

    A video belongs to an item when it is the item's recorded video (ids compared in one notation), else
    when it holds the item's bytes (md5 of the stored bytes; every file of a chaos inventory has its own
    size), else when its title is the title the item's create sent (a placeholder for shared titles) as the
    service may keep it (core.tidy.same_title), and the
    item has no recorded video yet (its create's outcome is unknown, or init named a session). Titles are
    not unique: among several such items, the one with the fewest videos so far gets it (the check never
    invents a duplicate).
    """
    owners = {try_normal_id(i.video_id): i.key for i in items if i.video_id}
    by_md5 = {md5_by_source[i.spec.source]: i.key for i in items if i.spec.source in md5_by_source}
    unknown: dict[str, list[str]] = {}
    for item in items:
        if not item.video_id and item.create_title:
            unknown.setdefault(item.create_title, []).append(item.key)
    per_item: dict[str, list[str]] = {}
    stray: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    for video in videos:
        key = owners.get(try_normal_id(video["id"])) or (
            by_md5.get(video["md5"]) if video.get("md5") else None
        )
        if key is None:
            later.append(video)
        else:
            per_item.setdefault(key, []).append(video["id"])
    for video in later:  # no bytes of an item (yet): by the title its create sent, as the service keeps it
        candidates = [k for sent, keys in unknown.items() if same_title(sent, video["title"]) for k in keys]
        if not candidates:
            stray.append(video)
            continue
        key = min(candidates, key=lambda k: len(per_item.get(k, [])))
        per_item.setdefault(key, []).append(video["id"])
    return per_item, stray


def items_so_far(path: Path) -> list[Any]:
    """The items of a ledger a killed run may have left at any moment: none while the ledger does not exist
    yet or holds no schema (a run killed before or while creating it)."""
    if not path.exists():
        return []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
        tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    return ledger_items(path) if tables else []


def assert_no_duplicates(control: EmulatorControl, ws: Workspace, path: Path) -> None:
    """Never more than one video per item and no video of nobody, at any point (also between killed runs).

    A run killed before its ledger existed must have made no video: with no ledger every video is a stray.
    """
    items = items_so_far(path)
    md5s = {i.spec.source: file_md5(Path(i.spec.source)) for i in items if Path(i.spec.source).is_file()}
    per_item, stray = attribute_videos(control.videos(ws), items, md5s)
    shown = [(v["title"], v["status"], v.get("file_size")) for v in stray[:5]]
    assert not stray, f"{len(stray)} videos no item owns: {shown}"
    doubled = {k: v for k, v in per_item.items() if len(v) > 1}
    assert not doubled, f"{len(doubled)} items with more than one video: {sorted(doubled.items())[:5]}"


def assert_settled(path: Path) -> dict[str, int]:
    """Every item is in an end state; failed ones carry an error code and message. Returns the counts.

    The documented exception (docs/guarantees.md, "never a lost item"): an item whose video could not be
    looked up because the listing kept failing stays for the next run, in `creating` (its journal ends with
    "reconcile postponed") or, when the init named an upload session, in `uploading` ("video lookup
    postponed"). Any other item left short of an end state fails, with its last journal lines.
    """
    counts: dict[str, int] = {}
    ledger = Ledger.open(path, create=False)
    try:
        for item in ledger.items():
            counts[item.state] = counts.get(item.state, 0) + 1
            if item.state in FAILED_STATES:
                assert item.error_code and item.error_message, (
                    f"item {item.key} {item.state} without a reason"
                )
            if item.state in END_STATES:
                continue
            journal = [f"{e.kind} {e.to_state}: {e.message}" for e in ledger.events(item.key)]
            postponed = {
                "creating": "note creating: reconcile postponed",
                "uploading": "note uploading: video lookup postponed",
            }
            if journal and item.state in postponed and journal[-1].startswith(postponed[item.state]):
                continue
            raise AssertionError(
                f"item {item.key} (row {item.spec.row}) left in {item.state} after {item.attempts} create "
                f"attempts, no error code; its journal ends: {journal[-4:]}"
            )
    finally:
        ledger.close()
    return counts


def expected_title(row: dict[str, Any]) -> str:
    """The title a row's video must end with: the row's, else the file name without extension."""
    return str(row["title"]) or Path(row["source"]).stem


def assert_exactly_one_each(
    control: EmulatorControl, ws: Workspace, path: Path, rows: Sequence[dict[str, Any]]
) -> None:
    """After the clean rerun: every item finished, and the service holds exactly its video for each, done,
    with the bytes of the item's own file (items mapped by source: titles are not unique) and each of its
    attachments once as a material."""
    items = ledger_items(path)
    assert len(items) == len(rows)
    not_finished = [(i.key, i.state, i.error_code, i.error_message) for i in items if i.state != "finished"]
    assert not not_finished, not_finished[:5]
    videos = {str(try_normal_id(v["id"])): v for v in control.videos(ws)}
    recorded = [str(try_normal_id(i.video_id)) for i in items]
    extra = [(v["title"], v["status"], v["file_size"]) for k, v in videos.items() if k not in recorded]
    missing = [i.key for i in items if str(try_normal_id(i.video_id)) not in videos]
    assert sorted(videos) == sorted(recorded), (
        f"{len(videos)} videos in the service, {len(set(recorded))} recorded for {len(items)} items; "
        f"not recorded: {extra[:5]}; recorded, not in the service: {missing[:5]}"
    )
    by_source = {r["source"]: r for r in rows}
    for item in items:
        video = videos[str(try_normal_id(item.video_id))]
        row = by_source[item.spec.source]
        source = Path(row["source"])
        assert video["status"] == "done", (item.key, video["status"])
        assert video["file_size"] == source.stat().st_size, (
            item.key,
            video["file_size"],
            source.stat().st_size,
        )
        assert video["md5"] == file_md5(source), f"{item.key}: the video holds other bytes than {source.name}"
        assert same_title(expected_title(row), video["title"]), (
            item.key,
            video["title"],
            expected_title(row),
        )
        if row["tags"]:
            assert same_tags(row["tags"].split(";"), video["tags"]), (item.key, video["tags"])
        if row["chapters"]:
            assert [c["time"] for c in video["chapters"]["items"]] == [0, 250], (item.key, video["chapters"])
        held = sorted((m["original_name"], m["file_size"]) for m in video.get("additional_materials") or [])
        wanted = sorted((Path(p).name, Path(p).stat().st_size) for p in row["attachments"].split("|") if p)
        assert held == wanted, f"{item.key}: materials {held}, not each of {wanted} once"
