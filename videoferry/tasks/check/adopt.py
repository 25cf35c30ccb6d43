"""Check --adopt: record in the ledger the videos the service holds for items it has no video for.

An item whose ledger entry is `planned` (no video known) is adopted when exactly one unowned video in its
parent has its title (as a service may keep it, or the item's placeholder; narrowed by its source's size,
else the oldest when the row is alone with its title: later ones are copies), the service has it (done or
processing), and its bytes agree with the source; a video whose bytes differ or cannot be compared (trimmed
or replaced since, an account without originals) is adopted too and said, unless `reupload_unproven`. A
planned item whose title does name videos in its parent none of which can be told to be its own is held
(failed, `adopt_held`, which migrate does not requeue): no second video for it unless asked (`check --adopt
--reupload-unproven` releases it). The fields the service holds differently from the row are kept (apply may
have set them) and named, unless `rewrite_differing`: then migrate's finish step writes the row's. Every
adoption says what a following migrate will do with the item. The service is not called here; the ledger
records an adoption through its own steps (begin_create, then adopt, as a lost create answer is reconciled;
finished when nothing more is owed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from videoferry.connectors.titles import is_placeholder
from videoferry.core.item import ItemSpec, ItemState, VideoStatus, owed_update
from videoferry.state.errors import LedgerError
from videoferry.state.ledger import Ledger
from videoferry.state.machine import HELD_BY_ADOPT
from videoferry.tasks.check.compare import CheckLine
from videoferry.tasks.check.listing import OLDEST, Listing, Match

#: Statuses of a video an item may be adopted with (a video still waiting for bytes or failed is not adopted).
ADOPTABLE = frozenset({VideoStatus.DONE, VideoStatus.PROCESSING, VideoStatus.PRE_PROCESSING})
#: Ways bytes were compared that prove a video holds the item's source.
PROVEN_BY = frozenset({"md5", "download-md5", "size"})
#: Differences that are the bytes (or the status), not fields migrate's finish step writes.
NOT_WRITTEN = frozenset({"size", "md5", "duration", "status"})


@dataclass(frozen=True)
class AdoptPolicy:
    """What the user allowed: upload items whose video bytes do not prove again; write the row's fields."""

    reupload_unproven: bool = False
    rewrite_differing: bool = False


@dataclass(frozen=True)
class Adoption:
    """What --adopt did with one item: adopted (video, what migrate still writes), held, or left to migrate.

    creates: a following migrate creates a video for it; writes: the fields its finish step writes.
    """

    key: str
    adopted: bool
    video_id: str | None
    detail: str
    creates: bool = False
    writes: tuple[str, ...] = ()

    def text(self) -> str:
        """The line as printed."""
        if self.adopted:
            return f"adopted {self.key}: video {self.video_id} ({self.detail})"
        if self.creates:
            return f"left to migrate {self.key}: {self.detail}"
        return f"held {self.key}: {self.detail}"


def refusal(match: Match, line: CheckLine, state: str | None, policy: AdoptPolicy) -> str | None:
    """Why this item may not be adopted (None: it may)."""
    if state != ItemState.PLANNED:
        return None if state is None else f"the ledger already has it ({state})"
    video = match.video
    if video is None:
        return match.problem or "no video found"
    if match.how == "ledger":
        return "the ledger names its video already"
    if policy.reupload_unproven:
        if line.bytes_by not in PROVEN_BY:
            return "its bytes could not be compared (" + (line.note or "no size") + ")"
        if "size" in line.fields or "md5" in line.fields:
            return "the video with its title holds other bytes (" + ", ".join(line.fields) + ")"
        if match.how.startswith(OLDEST):
            return "several videos in its parent have its title and bytes; cannot tell which is this item's"
    if "parent" in line.fields:
        return "the video is not in its parent"
    if video.status not in ADOPTABLE:
        return f"its video is in status {video.status}"
    return None


def _unproven(match: Match, line: CheckLine) -> str:
    """What was taken without proof: other bytes, uncompared bytes, the oldest of several."""
    said = []
    if line.bytes_by not in PROVEN_BY:
        said.append("bytes not compared")
    elif "size" in line.fields or "md5" in line.fields:
        said.append("other bytes than its source (trimmed or replaced since?)")
    if match.how.startswith(OLDEST):
        said.append(f"by {match.how} (the later ones taken as copies)")
    return "; ".join(said)


def _writes(spec: ItemSpec, title: str, sent: str | None) -> tuple[str, ...]:
    """The fields migrate's finish step writes to an adopted item's video that is not finished."""
    owed = list(owed_update(spec, title, sent))
    return tuple(owed + (["chapters"] if spec.chapters else []))


def _titled(match: Match, dest: Listing, claimed: set[str]) -> int:
    """How many videos of the item's parent carry its title that no other item took."""
    spec, own = match.spec, match.video.id if match.video is not None else None
    return sum(1 for v in dest.titled(spec.parent_id, spec.title) if v.id == own or v.id not in claimed)


def _listed(names: list[str]) -> str:
    return ": " + ", ".join(names) if names else ""


def closing(adoptions: Sequence[Adoption]) -> str:
    """What a following migrate does after this adoption: exactly the creates and the field writes."""
    creates = [a.key for a in adoptions if a.creates]
    writes = [f"{a.key} ({', '.join(a.writes)})" for a in adoptions if a.writes]
    held = [a.key for a in adoptions if not a.adopted and not a.creates]
    out = f"a following migrate creates {len(creates)} video(s)" + _listed(creates)
    out += f"; writes the row's fields to {len(writes)}" + _listed(writes)
    if held:
        out += f"; {len(held)} held (no second video unless --reupload-unproven): " + ", ".join(held)
    return out


def adopt_items(
    ledger: Ledger,
    run_id: str,
    matches: Sequence[Match],
    lines: Sequence[CheckLine],
    dest: Listing,
    policy: AdoptPolicy | None = None,
) -> list[Adoption]:
    """Adopt every match of a planned item the policy allows; hold or leave to migrate every other one."""
    policy = policy or AdoptPolicy()
    claimed = {m.video.id for m in matches if m.video is not None}
    out: list[Adoption] = []
    for match, line in zip(matches, lines, strict=True):
        spec = match.spec
        item = ledger.get(spec.key)
        if item is not None and item.state == ItemState.FAILED and item.error_code == HELD_BY_ADOPT:
            ledger.requeue_failed(run_id, keys=[spec.key])  # held by an earlier --adopt: decided again
            item = ledger.get(spec.key)
        state = item.state if item is not None else None
        if state != ItemState.PLANNED:
            continue  # the ledger already knows where this item stands
        why = refusal(match, line, state, policy)
        video = match.video
        if why is not None or video is None:
            out.append(_not_adopted(ledger, run_id, match, why or "no video found", dest, claimed, policy))
            continue
        out.append(_adopt(ledger, run_id, match, line, policy))
    return out


def _not_adopted(
    ledger: Ledger,
    run_id: str,
    match: Match,
    why: str,
    dest: Listing,
    claimed: set[str],
    policy: AdoptPolicy,
) -> Adoption:
    """Held when videos with its title exist in its parent (unless the user allowed uploading it again)."""
    key = match.spec.key
    titled = _titled(match, dest, claimed)
    if policy.reupload_unproven or not titled:
        return Adoption(key, False, None, why + "; migrate uploads it", creates=True)
    message = (
        f"check --adopt: {titled} video(s) in its parent have its title but none is proved its own ({why}); "
        "not uploaded again (`check --adopt --reupload-unproven` lets migrate upload it)"
    )
    try:
        ledger.fail(key, run_id, HELD_BY_ADOPT, message)
    except LedgerError as exc:
        return Adoption(key, False, None, f"ledger refused ({exc}); migrate uploads it", creates=True)
    return Adoption(key, False, None, message.removeprefix("check --adopt: "))


def _adopt(ledger: Ledger, run_id: str, match: Match, line: CheckLine, policy: AdoptPolicy) -> Adoption:
    """Record one adoption; finished unless migrate's finish step is to write the row's fields."""
    spec, video = match.spec, match.video
    assert video is not None
    # A description the video lacks is recorded as not sent, so migrate's finish step owes it; so is the
    # title of a video found by the item's placeholder (its create's finish step never ran).
    sent = None if "description" in line.fields else spec.description
    marked = "title" in line.fields and is_placeholder(video.title)
    title = (video.title or "") if marked else spec.title
    try:
        ledger.begin_create(spec.key, run_id, title, create_description=sent)
    except LedgerError as exc:
        return Adoption(spec.key, False, None, f"ledger refused ({exc}); migrate uploads it", creates=True)
    try:
        new_state = ledger.adopt(spec.key, run_id, video.id, video.status or "")
    except LedgerError as exc:
        ledger.reconcile_none(spec.key, run_id, "check --adopt could not record the video")
        return Adoption(spec.key, False, None, f"ledger refused ({exc}); migrate uploads it", creates=True)
    differing = tuple(f for f in line.fields if f not in NOT_WRITTEN and not (marked and f == "title"))
    kept: tuple[str, ...] = ()
    if new_state == ItemState.DONE and not marked and not (differing and policy.rewrite_differing):
        ledger.finished(spec.key, run_id)
        new_state, kept = ItemState.FINISHED, differing
    writes = () if new_state == ItemState.FINISHED else _writes(spec, title, sent)
    said = [str(new_state)]
    if unproven := _unproven(match, line):
        said.append(unproven)
    if kept:
        kept_text = ", ".join(kept)
        said.append(f"kept as the service has them: {kept_text} (--rewrite-differing writes the row's)")
    if writes:
        said.append("migrate writes the row's " + ", ".join(writes))
    return Adoption(spec.key, True, video.id, "; ".join(said), writes=writes)
