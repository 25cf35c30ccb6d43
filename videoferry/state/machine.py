"""The item and operation state machines: every allowed transition, in one table each."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from videoferry.core.item import (
    COMPLETE_STATES as COMPLETE_STATES,  # re-exported: the one definition is core's
)
from videoferry.core.item import WAITING_FOR_BYTES, ItemState, Via, VideoStatus
from videoferry.state.errors import InvalidTransition

PLANNED = ItemState.PLANNED
CREATING = ItemState.CREATING
UPLOADING = ItemState.UPLOADING
UPLOADED = ItemState.UPLOADED
PROCESSING = ItemState.PROCESSING
DONE = ItemState.DONE
FINISHED = ItemState.FINISHED
FAILED = ItemState.FAILED
ERROR = ItemState.ERROR
ABORTED = ItemState.ABORTED

# Display order (reports, counts): the main path, then the failures.
STATES: tuple[str, ...] = (
    PLANNED,
    CREATING,
    UPLOADING,
    UPLOADED,
    PROCESSING,
    DONE,
    FINISHED,
    FAILED,
    ERROR,
    ABORTED,
)

# The one table of allowed item transitions (from -> the states it may go to). Self-transitions listed here
# are progress (offset, service status) rather than a change of state.
TRANSITIONS: Mapping[str, frozenset[str]] = {
    # A new item waits for its create call, or is refused on our side (missing source, bad row).
    PLANNED: frozenset({CREATING, FAILED}),
    # The create intent is written; the outcome is unknown until one of:
    #   uploading  - init answered (video id + endpoint saved in the same transaction)
    #   processing - single / URL upload accepted (video id saved)
    #   planned    - reconcile found no matching video: safe to create again
    #   uploading | processing | done | error | aborted - reconcile adopted a match, as its status says
    #   failed     - the service refused the create (a 4xx: nothing was created)
    CREATING: frozenset({UPLOADING, PROCESSING, DONE, ERROR, ABORTED, PLANNED, FAILED}),
    # Offset progress (no event per chunk), the last byte acknowledged, or the service's status already says
    # the upload completed (our record of it was lost). planned: restart() after the flow deleted the video.
    UPLOADING: frozenset({UPLOADING, UPLOADED, PROCESSING, DONE, ERROR, ABORTED, FAILED, PLANNED}),
    UPLOADED: frozenset({PROCESSING, DONE, ERROR, ABORTED, FAILED, PLANNED}),
    PROCESSING: frozenset({PROCESSING, DONE, ERROR, ABORTED, FAILED, PLANNED}),
    # The finish step (chapters, tags, privacy, title) ran, or failed for good (the video id is kept).
    DONE: frozenset({FINISHED, FAILED}),
    FINISHED: frozenset(),
    # requeue_failed(): back to where the item failed (planned when no video exists yet).
    FAILED: frozenset({PLANNED, UPLOADING, UPLOADED, PROCESSING, DONE}),
    # The service's processing failed: only an explicit requeue / restart creates a new video.
    ERROR: frozenset({PLANNED}),
    ABORTED: frozenset({PLANNED}),
}

# States in which an item may have an upload or processing the service reports on.
WATCHED_STATES: frozenset[str] = frozenset({UPLOADING, UPLOADED, PROCESSING})
# States with nothing more to do in this run (counted as the end of an item's run).
#: The error code of an item `check --adopt` held: videos with its title exist in its parent, none proved its
#: own. The requeue at every migrate's start leaves it failed (no second video unless asked for by key).
HELD_BY_ADOPT = "adopt_held"
END_STATES: frozenset[str] = frozenset({FINISHED, FAILED, ERROR, ABORTED})

# The service's video status (spec 3.1) -> our item state. Non-terminal statuses all mean "processing" to us;
# progress is never a readiness signal.
SERVICE_STATUSES: Mapping[VideoStatus, ItemState] = {
    VideoStatus.PENDING: PROCESSING,
    VideoStatus.UPLOADING: PROCESSING,
    VideoStatus.PRE_PROCESSING: PROCESSING,
    VideoStatus.PROCESSING: PROCESSING,
    VideoStatus.DONE: DONE,
    VideoStatus.ERROR: ERROR,
    VideoStatus.ABORTED: ABORTED,
}


def check_transition(key: str, from_state: str | None, to_state: str) -> None:
    """Raise InvalidTransition unless the table allows from_state -> to_state (None: a new item)."""
    if to_state not in TRANSITIONS:
        raise InvalidTransition(key, from_state, to_state, "unknown state")
    if from_state is None:
        if to_state != PLANNED:
            raise InvalidTransition(key, from_state, to_state, "a new item starts planned")
        return
    if to_state not in TRANSITIONS.get(from_state, frozenset()):
        raise InvalidTransition(key, from_state, to_state)


def state_for_status(status: str, current: str, via: str | None) -> str:
    """The item state a service status implies, given the item's current state and upload method.

    Unknown statuses (a newer service) count as still processing. While our tus upload is running (or when a
    reconciled tus video has not received all its bytes), pending/uploading means "still uploading".
    """
    if status in WAITING_FOR_BYTES:
        if current == UPLOADING:
            return UPLOADING
        if current == CREATING and (via or Via.TUS) == Via.TUS:
            return UPLOADING
    try:
        return SERVICE_STATUSES[VideoStatus(status)]
    except ValueError:
        return PROCESSING


def status_error_code(target: str) -> str | None:
    """The error code an item gets when a service status moves it to `target`: video_error or
    video_aborted (the service failed or aborted the video), None for any other state."""
    return f"video_{target}" if target in (ERROR, ABORTED) else None


class OpStatus(StrEnum):
    """Where one recorded call (an op) stands: intent before the call, then exactly one outcome."""

    INTENT = "intent"
    DONE = "done"
    FAILED = "failed"
    VOID = "void"  # the call provably did nothing (or is the same whatever it did): safe to send again


# Operations (edits, finish steps, archive steps, setup writes): one row per call, intent, then outcome.
OP_TRANSITIONS: Mapping[str, frozenset[str]] = {
    OpStatus.INTENT: frozenset({OpStatus.DONE, OpStatus.FAILED, OpStatus.VOID}),
    OpStatus.DONE: frozenset(),
    OpStatus.FAILED: frozenset(),
    OpStatus.VOID: frozenset(),
}
#: Every operation kind the ledger records, and what it does. Add a kind here before a task records it.
OP_KINDS: Mapping[str, str] = {
    "chapters": "set a video's chapters (finish step)",
    "update": "update a video's title, description, tags or privacy (finish step)",
    "copy": "copy a video, e.g. into another project (creates a video)",
    "concat": "join videos into a new one (creates a video)",
    "cut": "trim a video in place (needs the before snapshot)",
    "move": "move a video to another project",
    "delete": "delete a video",
    "replace": "replace a video's file in place (needs the before snapshot)",
    "reinit": "a new upload session (init type replace) for a video whose upload address was lost",
    "attach": "make files additional materials of a video, each once (looked up on the video before sent)",
    "archive": "keep a live recording outside the service: copy, chat and QoS, manifest (archive job)",
    "delete_recording": "delete a live event's / stream's recording",
    "backup": "keep a video outside the service: its file, other files, metadata; the index (backup job)",
    "backup_prune": "remove from a backup the files of a video deleted in the service (backup --prune)",
    "create_event": "create a live event (setup; creates a live_event)",
    "update_event": "update a live event's fields (setup)",
    "delete_event": "delete a live event (setup, --prune)",
    "create_restream": "add a restream target to a live event (setup)",
    "update_restream": "change a restream target (setup)",
    "delete_restream": "remove a restream target (setup, --prune)",
    "create_codes": "create a unique codes batch of a live event (setup)",
    "delete_codes": "delete a unique codes batch (setup, --prune)",
    "schedule_stream": "move the start of a live event's upcoming stream (setup)",
    "create_stream": "schedule one more stream of a recurring live event (setup, next_stream)",
    "enable_event": "enable a live event: its streams are ingested (setup, state)",
    "complete_event": "complete a live event: its ingest stops (setup, state)",
    "set_share": "write an event's privacy_share again after its first codes batch (setup)",
    "set_poster": "set a live event's poster from an image address (setup)",
    "set_drm": "set the DRM authorisation callback of the workspace or a project (setup)",
    "delete_drm": "delete the DRM authorisation callback of the workspace or a project (setup, --prune)",
    "create_domain": "add a privacy domain to the workspace (setup)",
    "update_domain": "rename, archive or restore a privacy domain (setup)",
    "delete_domain": "delete a privacy domain (setup, --prune)",
}
#: What an operation acts on (target_kind) or created (created_kind).
OBJECT_KINDS: tuple[str, ...] = ("video", "live_event", "stream", "project")
# Operations that create a new object: an unknown outcome is reconciled by listing before any repeat.
OP_CREATES_OBJECT: frozenset[str] = frozenset({"copy", "concat", "archive"})
# In-place operations whose repeat would apply twice: the intent carries version / updated_at / duration.
OP_IN_PLACE: frozenset[str] = frozenset({"cut", "replace"})


def check_op_transition(op_id: int, from_status: str, to_status: str) -> None:
    """Raise InvalidTransition unless an operation may go from from_status to to_status."""
    if to_status not in OP_TRANSITIONS.get(from_status, frozenset()):
        raise InvalidTransition(f"op {op_id}", from_status, to_status)


class UnitState(StrEnum):
    """Where an apply unit stands: one operation of an operations file on one video."""

    PLANNED = "planned"  # waits for its turn (and for what it references)
    RUNNING = "running"  # its call's intent is written; the ops table holds intent and outcome
    PROCESSING = "processing"  # the call is done; the video it made or changed is not yet `done`
    DONE = "done"
    FAILED = "failed"


# Apply units (a select: target fans out into one unit per video it found).
UNIT_TRANSITIONS: Mapping[str, frozenset[str]] = {
    UnitState.PLANNED: frozenset({UnitState.RUNNING, UnitState.DONE, UnitState.FAILED}),
    # planned again: the call provably did not take effect (its op is void) and is repeated.
    UnitState.RUNNING: frozenset({UnitState.PLANNED, UnitState.PROCESSING, UnitState.DONE, UnitState.FAILED}),
    UnitState.PROCESSING: frozenset({UnitState.DONE, UnitState.FAILED}),
    UnitState.DONE: frozenset(),
    # A later run tries a failed unit again: from the start, or from waiting when its call was done.
    UnitState.FAILED: frozenset({UnitState.PLANNED, UnitState.PROCESSING}),
}
UNIT_END_STATES: frozenset[UnitState] = frozenset({UnitState.DONE, UnitState.FAILED})


class RunStatus(StrEnum):
    """How a run of any job stands: running, then one final status with the same words for every job."""

    RUNNING = "running"
    DONE = "done"  # everything asked is done (exit status 0)
    INCOMPLETE = "incomplete"  # something is not done: failed, left waiting, or differs (exit status 1)
    REFUSED = "refused"  # configuration to fix first; stopped before or while working (exit status 2)
    INTERRUPTED = "interrupted"  # stopped by the user, or found still running after its process died
    FAILED = "failed"  # ended by an error of videoferry itself (a bug: its traceback says where)


def check_unit_transition(key: str, from_state: str, to_state: str) -> None:
    """Raise InvalidTransition unless an apply unit may go from from_state to to_state."""
    if to_state not in UNIT_TRANSITIONS.get(from_state, frozenset()):
        raise InvalidTransition(key, from_state, to_state)
