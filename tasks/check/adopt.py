"""Check --adopt: record in the ledger the videos the service provably holds for items it has no video for.

An item is adopted only when its ledger entry is `planned` (no video known), exactly one video in its parent
has its title (as a service may keep it, or the item's placeholder) and its source's size (and md5 where the
service gives one), no ledger entry owns that video, and the service has it (done or processing). Everything
else is left to migrate and named. The service
is not called here: nothing is created, changed or deleted; the ledger records the adoption through its own
steps (begin_create, then adopt, as a lost create answer is reconciled; finished when nothing more is owed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.item import ItemState, VideoStatus
from state.errors import LedgerError
from state.ledger import Ledger
from tasks.check.compare import CheckLine, Mark
from tasks.check.listing import Match

#: Statuses of a video an item may be adopted with (a video still waiting for bytes or failed is not adopted).
ADOPTABLE = frozenset({VideoStatus.DONE, VideoStatus.PROCESSING, VideoStatus.PRE_PROCESSING})
#: Ways bytes were compared that prove a video holds the item's source.
PROVEN_BY = frozenset({"md5", "download-md5", "size"})


@dataclass(frozen=True)
class Adoption:
    """What --adopt did with one item: adopted (video, the item's new state) or left (why)."""

    key: str
    adopted: bool
    video_id: str | None
    detail: str

    def text(self) -> str:
        """The line as printed."""
        if self.adopted:
            return f"adopted {self.key}: video {self.video_id} ({self.detail})"
        return f"left to migrate {self.key}: {self.detail}"


def refusal(match: Match, line: CheckLine, state: str | None) -> str | None:
    """Why this item may not be adopted (None: it may)."""
    if state != ItemState.PLANNED:
        return None if state is None else f"the ledger already has it ({state})"
    video = match.video
    if video is None:
        return match.problem or "no video found"
    if match.how == "ledger":
        return "the ledger names its video already"
    if line.bytes_by not in PROVEN_BY:
        return "its bytes could not be compared (" + (line.note or "no size") + ")"
    if "size" in line.fields or "md5" in line.fields:
        return "the video with its title holds other bytes (" + ", ".join(line.fields) + ")"
    if "parent" in line.fields:
        return "the video is not in its parent"
    if video.status not in ADOPTABLE:
        return f"its video is in status {video.status}"
    return None


def adopt_items(
    ledger: Ledger, run_id: str, matches: Sequence[Match], lines: Sequence[CheckLine]
) -> list[Adoption]:
    """Adopt every provable match of a planned item; name every planned item left to migrate."""
    out: list[Adoption] = []
    for match, line in zip(matches, lines, strict=True):
        spec = match.spec
        item = ledger.get(spec.key)
        state = item.state if item is not None else None
        if state != ItemState.PLANNED:
            continue  # the ledger already knows where this item stands
        why = refusal(match, line, state)
        video = match.video
        if why is not None or video is None:
            out.append(Adoption(spec.key, False, None, why or "no video found"))
            continue
        # A description the video lacks is recorded as not sent, so migrate's finish step owes it; so is a
        # title it lacks (a video found by the item's placeholder: its create's finish step never ran).
        sent = None if "description" in line.fields else spec.description
        title = (video.title or "") if "title" in line.fields else spec.title
        try:
            ledger.begin_create(spec.key, run_id, title, create_description=sent)
        except LedgerError as exc:
            out.append(Adoption(spec.key, False, None, f"ledger refused ({exc})"))
            continue
        try:
            new_state = ledger.adopt(spec.key, run_id, video.id, video.status or "")
        except LedgerError as exc:
            ledger.reconcile_none(spec.key, run_id, "check --adopt could not record the video")
            out.append(Adoption(spec.key, False, None, f"ledger refused ({exc})"))
            continue
        if new_state == ItemState.DONE and line.mark is Mark.SAME:
            ledger.finished(spec.key, run_id)
            new_state = ItemState.FINISHED
        detail = (
            new_state if line.mark is Mark.SAME else f"{new_state}; migrate applies: {', '.join(line.fields)}"
        )
        out.append(Adoption(spec.key, True, video.id, detail))
    return out
