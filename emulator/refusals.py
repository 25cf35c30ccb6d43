"""A workspace whose own state refuses creates (spec 7's per-workspace codes): quota and billing variants;
with refuse-changes, its updates, moves and deletes of videos too."""

from __future__ import annotations

from dataclasses import dataclass

from emulator.errors import quota_reached, workspace_state
from emulator.state import Workspace
from emulator.variants import Variants

#: Where a workspace keeps its count of creates accepted since its variants were set (Workspace.extras).
_KEY = "refusals"


@dataclass
class _Accepted:
    """Creates accepted under one setting of the variants (a new setting starts again from 0)."""

    variants: Variants
    creates: int = 0


def admit_create(ws: Workspace) -> None:
    """A create of any object (video, upload, event, stream, restream, code batch, privacy domain) about to be
    made: refused with the REFUSING variant's code once `refuse_after` creates were accepted since the
    variants were set, else counted. Call it under the emulator's lock, after the request's own checks and
    before anything is stored."""
    code = ws.variants.refusal_code()
    if code is None:
        return
    accepted = ws.extras.get(_KEY)
    if not isinstance(accepted, _Accepted) or accepted.variants is not ws.variants:
        accepted = ws.extras[_KEY] = _Accepted(ws.variants)
    if accepted.creates >= ws.variants.refuse_after:
        raise workspace_state(code)
    accepted.creates += 1


def admit_video(ws: Workspace) -> None:
    """A new video about to be made (upload, copy, concat, a cut making a new video): refused with 100106
    when the workspace holds video_quota videos (video-quota), then as any create (admit_create). Under the
    emulator's lock, so concurrent creates never pass the quota."""
    if ws.variants.has("video-quota") and len(ws.videos) >= ws.variants.video_quota:
        raise quota_reached(ws.variants.quota_status)
    admit_create(ws)


def admit_change(ws: Workspace) -> None:
    """An update, move or delete of a video about to be made: under the variant refuse-changes refused and
    counted as a create (admit_create: a REFUSING variant's code once refuse_after were accepted); without
    it every change passes (the plainest reading: spec 7 does not show which calls the codes refuse)."""
    if ws.variants.has("refuse-changes"):
        admit_create(ws)
