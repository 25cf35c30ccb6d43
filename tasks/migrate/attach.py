"""The finish step's materials: an item's `attachments` made additional materials of its video, each once."""

from __future__ import annotations

from typing import Any

from connectors.errors import VideoApiError
from connectors.sources import SourceError
from state.machine import DONE, FAILED
from state.models import Item
from tasks.exactly_once import Intent, Lookup, NotMade, OpJournal, error_code, exactly_once
from tasks.migrate.context import MigrateContext
from tasks.sessions import Attached, attach_files, material_name, missing_materials
from tasks.stop import UploadStopped

#: The error code of an item one of whose attachments cannot be read.
ATTACHMENT_UNREADABLE = "attachment"
#: Attach calls one item makes in one finish step: a lost answer whose lookup finds a material missing is
#: sent once more (attach_files sends only what the video does not hold); after that the item fails naming
#: the lost answer (a rerun sends what is still missing).
ATTEMPTS = 2


def _stored(done: Attached) -> tuple[Any, tuple[str, str] | None]:
    return {"sent": done.sent, "present": done.present}, None


def attach_materials(ctx: MigrateContext, item: Item) -> str | None:
    """Make each of the item's attachments a material of its video, through tasks/exactly_once.py (op_key
    finish:<key>:attach); None when every one is on the video, else the state the item is left in.

    Before anything is sent, the video's additional_materials are read (tasks/sessions: name and size), so
    a material an earlier attempt left is never sent twice; an answer lost on the way is looked up the same
    way (a GET: believed at once). A refused call, an unreadable file or an answer lost ATTEMPTS times fails
    the item naming it (a rerun tries again); the run's stop between two chunks leaves the intent open and
    the item done.
    """
    assert item.video_id is not None
    video_id, sources = item.video_id, list(item.spec.attachments)
    journal: OpJournal[Attached] = OpJournal(
        ctx.ledger,
        ctx.run_id,
        f"finish:{item.key}:attach",
        "attach",
        {"attachments": [material_name(s) for s in sources]},
        owner_key=item.key,
        video_id=video_id,
    )
    journal.outcome = _stored

    def found(_intent: Intent) -> Attached | None:
        video = ctx.client.videos.get(video_id)
        if missing_materials(video, sources):
            return None
        return Attached(present=[material_name(s) for s in sources])

    lookup = Lookup(found, listing=False, absent="a material is missing on the video: sent again")

    def call() -> Attached:
        return attach_files(
            ctx.client, video_id, sources, s3=ctx.s3, chunk_size=ctx.chunk_size, stop=ctx.abort
        )

    lost: NotMade | None = None
    for _ in range(ATTEMPTS):
        try:
            exactly_once(journal, call, lookup=lookup, refused=(VideoApiError, SourceError))
            return None
        except NotMade as exc:
            lost = exc
            continue
        except UploadStopped:
            return DONE
        except SourceError as exc:
            ctx.ledger.fail(item.key, ctx.run_id, ATTACHMENT_UNREADABLE, f"attachments: {exc}")
            return FAILED
        except VideoApiError as exc:
            return ctx.refused(item.key, "attach", exc)
    assert lost is not None
    message = f"attach: the answer was lost {ATTEMPTS} times, a material still missing ({lost})"
    ctx.ledger.fail(item.key, ctx.run_id, error_code(lost.unknown), message)
    return FAILED
