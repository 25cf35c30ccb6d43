"""The per-run context every migration step receives: settings, client, ledger, counters."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from videoferry.connectors.config import DEFAULT_CHUNK_SIZE
from videoferry.connectors.errors import VideoApiError, stops_run
from videoferry.connectors.ids import same_id
from videoferry.connectors.platforms.links import PlatformLinks
from videoferry.state.machine import DONE, FAILED
from videoferry.tasks.exactly_once import error_code
from videoferry.tasks.migrate.init_ids import InitIds
from videoferry.tasks.migrate.parked import Parked
from videoferry.tasks.shared_listing import SharedListings
from videoferry.tasks.stop import Stop

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient
    from videoferry.connectors.models import Video
    from videoferry.connectors.s3 import S3Config
    from videoferry.connectors.tus import TusUpload
    from videoferry.connectors.webhook import WebhookReceiver
    from videoferry.state.ledger import Ledger
    from videoferry.state.models import Item
    from videoferry.tasks.gap import Gap
    from videoferry.tasks.migrate.byte_plane import DaskBytes

#: Poll interval once webhooks carry the news (polls remain a safety net).
WEBHOOK_POLL_SECONDS = 60.0

#: How the videos of a parent id are listed: a project's by project_id, a folder's by folder_id.
Scope = Literal["project_id", "folder_id"]


def scope_of(parent: str, video: Video) -> Scope:
    """How parent is listed, told by one of its videos: folder_id when the video sits in that folder."""
    in_folder = video.folder_id is not None and same_id(parent, video.folder_id)
    return "folder_id" if in_folder and not same_id(parent, video.project_id) else "project_id"


@dataclass
class Progress:
    """Run-wide counters: items and bytes known at the start (the flow logs them), bytes acknowledged."""

    items_total: int = 0
    bytes_total: int = 0
    bytes_sent: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_bytes(self, n: int) -> None:
        """Count n more bytes acknowledged by an upload endpoint."""
        with self._lock:
            self.bytes_sent += n


@dataclass
class MigrateContext:
    """Everything one migration run shares between its steps (never serialised, never logged)."""

    client: VideoClient
    tus: TusUpload
    ledger: Ledger
    run_id: str
    s3: S3Config | None = None
    #: The --ledger value (a path, or s3:// for a remote ledger whose local copy `ledger` is).
    ledger_url: str = ""
    #: The replication gap when the run's remote ledger may be behind (tasks/gap.py), else None.
    gap: Gap | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    poll_interval: float = 5.0
    #: Creates one item may make in one run (counted in `creates` across every round of the run).
    max_create_attempts: int = 3
    creates: dict[str, int] = field(default_factory=dict)
    #: Items whose upload endpoint this run's own init just returned, nothing sent to it yet: their first
    #: upload skips the HEAD (upload.upload_item takes the key out; any later upload of theirs HEADs first).
    fresh_uploads: set[str] = field(default_factory=set)
    #: parent ids the service refused on a create (400236: unknown, or another workspace's) -> the reason;
    #: later items with that parent fail at once instead of repeating the same refused call.
    refused_parents: dict[str, str] = field(default_factory=dict)
    #: --parent-id: when the service refuses it, the whole run stops (a configuration error, exit 2).
    default_parent_id: str | None = None
    progress: Progress = field(default_factory=Progress)
    #: The run's stop (the run's own, flows/job.Run.stop): set once, with what stopped it.
    abort: Stop = field(default_factory=Stop)
    #: (parent, title_group_key) pairs several items fall in (create.item_title_groups, learned once per run).
    shared_titles: frozenset[tuple[str, str]] | None = None
    #: Whether init answers name the video or an upload session: learned once per run by a probe no create
    #: waits for (tasks/migrate/init_ids.py).
    init_ids: InitIds = field(default_factory=InitIds)
    #: parent id -> how its videos are listed (learned once per parent: from the GET that learns what init
    #: ids name, else from one GET by the first listing: readiness.Watcher).
    scopes: dict[str, Scope] = field(default_factory=dict)
    #: The webhook receiver when --webhook-listen is on (polls slow down only once a claim was confirmed).
    webhooks: WebhookReceiver | None = None
    #: Webhook claims a listing confirmed (the service showed the claimed status), refuted (it showed
    #: another), and ignored (about no video of this ledger, or one no longer watched): migrate/claims.py.
    claims_confirmed: int = 0
    claims_refuted: int = 0
    claims_ignored: int = 0
    #: --dask: tus byte transfers run on this cluster's workers (None: in this process).
    bytes_plane: DaskBytes | None = None
    #: Items whose cut title was said as a warning in this run (said once: finish.warn_if_cut).
    warned: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Download links of platform sources (vimeo:<id>, wistia:<hashed_id>), resolved when a create is due.
    platforms: PlatformLinks = field(default_factory=PlatformLinks)
    #: The service refused an init of type replace for a found video without its upload address: such
    #: videos are deleted and created again for the rest of the run (reconcile.new_upload_address).
    reinit_refused: bool = False
    #: The lookups' shared listings: one listing settles the lost create answers of a round (per parent).
    listings: SharedListings = field(default_factory=SharedListings)
    #: Lost create answers looked up too early, until their settle time (tasks/migrate/parked.py).
    parked: Parked = field(default_factory=Parked)

    def poll_seconds(self) -> float:
        """Seconds between two status listings: --poll-interval under the service's poll rule (the spec's 5 s,
        or the one its answers state: connectors/client/poll_pacing.PollRule.interval_for)."""
        return self.client.transport.poll_rule.interval_for(self.poll_interval)

    def poll_every(self) -> float:
        """Seconds between full status polls: a minute once a webhook claim was confirmed by the service
        (webhooks proved to work: tasks/migrate/claims.py), else poll_seconds()."""
        if self.webhooks is not None and self.claims_confirmed > 0:
            return max(self.poll_seconds(), WEBHOOK_POLL_SECONDS)
        return self.poll_seconds()

    def count_create(self, key: str) -> int | None:
        """Count one more create of this item in this run; None once it has had max_create_attempts."""
        with self.lock:
            made = self.creates.get(key, 0)
            if made >= self.max_create_attempts:
                return None
            self.creates[key] = made + 1
            return made + 1

    def refused(self, key: str, what: str, exc: VideoApiError) -> str:
        """A finish-step call the service refused; the item's state after it: a refused token or the
        workspace's state (quota, balance...: errors.stops_run) stops the run (the item stays done for the
        next), anything else fails the item naming the call (a rerun sends it again)."""
        if stops_run(exc):
            self.stop(exc)
            return DONE
        self.ledger.fail(key, self.run_id, error_code(exc), f"{what}: {exc}", exc.request_id)
        return FAILED

    def stop(self, cause: BaseException) -> None:
        """Ask every worker to stop taking new items because of cause (a refused token, Ctrl-C...)."""
        self.abort(cause)


def reload(ctx: MigrateContext, key: str) -> Item:
    """The item as the ledger has it now."""
    item = ctx.ledger.get(key)
    if item is None:
        raise LookupError(f"item {key!r} vanished from the ledger")
    return item
