"""The finish step: once a video is done, apply what could not travel with the create (metadata, chapters,
attachments), each call once, and compare what the service kept with what was asked (core/tidy.py)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from connectors.errors import VideoApiError
from connectors.models import Chapters, Video
from connectors.titles import is_placeholder
from core.item import owed_update, owes_metadata
from core.tidy import same_chapters, same_description, same_tags, same_title, title_cut
from state.machine import FAILED, FINISHED
from state.models import Item
from tasks.exactly_once import OpJournal, exactly_once
from tasks.migrate.attach import attach_materials
from tasks.migrate.context import MigrateContext

log = logging.getLogger(__name__)

#: The error code of an item whose video keeps a field in a form no tidying explains (core/tidy.py).
STORED_DIFFERS = "stored_differs"
#: Longest value shown in a stored_differs message.
SHOWN_VALUE = 80


def owes_nothing(item: Item) -> bool:
    """Whether the finish step has no call to make for this item (nothing but the move to finished)."""
    return not owes_metadata(item.spec, item.create_title, item.create_description)


def _no_result(_answer: Any) -> tuple[Any, tuple[str, str] | None]:
    return None, None


def finish_item(ctx: MigrateContext, item: Item) -> str:
    """Apply metadata and chapters to a done item's video, compare what the service kept, attach its
    materials (tasks/migrate/attach.py), then mark it finished; returns the new state.

    Each call is an operation through tasks/exactly_once.py (op_key finish:<key>:update|chapters); both
    are the same whatever happened before, so one an earlier run left open is simply sent again. What the
    answer shows is compared with what was asked under core/tidy.py's rules: kept in another form (tidied,
    tags lower-cased or deduplicated, chapter titles trimmed) is the same; a title the service cut to its cap
    is the same and said once as a warning (never sent again); anything else fails the item naming the field
    (a rerun sends it once more), never a loop of sends within a run.
    """
    assert item.video_id is not None
    video_id = item.video_id
    fields = owed_update(item.spec, item.create_title, item.create_description)
    steps: list[tuple[str, dict[str, Any]]] = []
    if fields:
        steps.append(("update", fields))
    if item.spec.chapters:
        marks = [[c.time, c.title] for c in item.spec.chapters]
        steps.append(("chapters", {"items": marks, "enabled": True}))
    for kind, params in steps:
        key = f"finish:{item.key}:{kind}"
        journal: OpJournal[Any] = OpJournal(
            ctx.ledger, ctx.run_id, key, kind, params, owner_key=item.key, video_id=video_id
        )
        journal.outcome = _no_result

        def call(kind: str = kind, params: dict[str, Any] = params) -> Video | Chapters:
            if kind == "update":
                return ctx.client.videos.update(video_id, **params)
            marks = [(t, s) for t, s in params["items"]]
            return ctx.client.videos.set_chapters(video_id, marks, enabled=True)

        try:
            answer = exactly_once(journal, call)
        except VideoApiError as exc:
            return ctx.refused(item.key, kind, exc)
        kept = kept_otherwise if kind == "update" else chapters_kept_otherwise
        differ = kept(params, answer)
        if differ:
            message = "the service kept " + "; ".join(differ) + " (beyond any tidying: core/tidy.py)"
            ctx.ledger.fail(item.key, ctx.run_id, STORED_DIFFERS, message)
            return FAILED
        if kind == "update" and isinstance(answer, Video) and "title" in params:
            warn_if_cut(ctx, item.key, str(params["title"]), answer.title)
    if item.spec.attachments:
        left = attach_materials(ctx, item)
        if left is not None:
            return left
    ctx.ledger.finished(item.key, ctx.run_id)
    return FINISHED


def warn_if_cut(ctx: MigrateContext, key: str, asked: str, stored: str | None) -> None:
    """A title the service cut to its cap is said once as a warning (summary and report), never sent again."""
    if stored is None or is_placeholder(asked) or not title_cut(asked, stored):
        return
    with ctx.lock:
        if key in ctx.warned:
            return
        ctx.warned.add(key)
    ctx.ledger.note(
        key,
        ctx.run_id,
        f"title cut by the service to its first {len(stored)} characters (its cap); kept as it is, not sent"
        f" again: {stored!r}",
        kind="warning",
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 3] + "..."


def kept_otherwise(asked: Mapping[str, Any], video: Any) -> list[str]:
    """The fields of an update the answer shows in a form no tidying explains ("name: asked ..., kept ...").

    A field the answer leaves out is not judged (an answer may carry only some fields).
    """
    if not isinstance(video, Video):
        return []
    shown = video.model_fields_set
    differ: list[str] = []

    def check(name: str, same: bool, stored: Any) -> None:
        if name in asked and name in shown and not same:
            differ.append(f"{name} as {_shown(stored)}, not {_shown(asked[name])}")

    if "title" in asked:
        check("title", same_title(str(asked["title"]), video.title or ""), video.title)
    if "description" in asked:
        check("description", same_description(asked["description"], video.description), video.description)
    if "tags" in asked:
        check("tags", same_tags(list(asked["tags"]), list(video.tags or [])), video.tags)
    if "privacy_type" in asked:
        check("privacy_type", asked["privacy_type"] == video.privacy_type, video.privacy_type)
    if "privacy_domains" in asked:
        want = {d.lower() for d in asked["privacy_domains"]}
        have = {d.lower() for d in video.privacy_domains or []}
        check("privacy_domains", want == have, video.privacy_domains)
    return differ


def chapters_kept_otherwise(asked: Mapping[str, Any], answer: Any) -> list[str]:
    """The chapters call's answer, when it shows chapters not the asked ones once tidied (times in ms)."""
    if not isinstance(answer, Chapters):
        return []
    want: Sequence[tuple[int, str]] = [(round(float(t) * 1000), str(s)) for t, s in asked["items"]]
    have = [(c.time, c.title) for c in answer.items]
    if same_chapters(want, have):
        return []
    return [f"chapters as {_shown(have)}, not {_shown(list(want))}"]
