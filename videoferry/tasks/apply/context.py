"""The per-run context of `videoferry apply`: client, ledger, operations by id, stop flag, create locks."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from videoferry.connectors.config import DEFAULT_CHUNK_SIZE
from videoferry.connectors.ids import try_normal_id
from videoferry.tasks.stop import Stop

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient
    from videoferry.connectors.s3 import S3Config
    from videoferry.core.operation import OperationSpec
    from videoferry.state.ledger import Ledger
    from videoferry.tasks.gap import Gap


@dataclass
class ApplyContext:
    """Everything one apply run shares between its workers (never serialised, never logged)."""

    client: VideoClient
    ledger: Ledger
    run_id: str
    specs: dict[str, OperationSpec]
    s3: S3Config | None = None
    #: tus chunk size; a replace whose file is at least this big goes by tus (calls.resumable).
    chunk_size: int = DEFAULT_CHUNK_SIZE
    #: --poll-interval: seconds between two status reads of one processing video (the spec: at most one per
    #: 5 s; poll_seconds() is what the run keeps).
    poll_interval: float = 5.0
    #: The run's stop (the run's own, flows/job.Run.stop): set once, with what stopped it.
    abort: Stop = field(default_factory=Stop)
    #: Creates that land in the same parent with titles a tidying service could make alike (one
    #: core.tidy.title_group_key) run one at a time, so a lost answer's lookup only finds what its call made.
    create_locks: defaultdict[tuple[str, str], threading.Lock] = field(
        default_factory=lambda: defaultdict(threading.Lock)
    )
    #: Calls on one video run one at a time (intent to outcome, reconcile included): a reconcile then sees
    #: only what its own call did to the video, never another unit's edit.
    video_locks: defaultdict[str, threading.Lock] = field(default_factory=lambda: defaultdict(threading.Lock))
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The replication gap when the run's remote ledger may be behind (tasks/gap.py), else None.
    gap: Gap | None = None
    #: Push every committed write to where the ledger outlives the machine before returning (a remote
    #: ledger's S3; nothing for a local file): in-place calls make their intent durable before the call.
    durable: Callable[[], None] = field(default=lambda: None, repr=False)

    def poll_seconds(self) -> float:
        """Seconds between two status reads of one video: --poll-interval under the service's poll rule (the
        spec's 5 s, or the one its answers state: connectors/client/poll_pacing.PollRule.interval_for)."""
        return self.client.transport.poll_rule.interval_for(self.poll_interval)

    def video_lock(self, video_id: str) -> threading.Lock:
        """The lock of calls on this video."""
        with self.lock:
            return self.video_locks[video_id]

    def create_lock(self, parent: str | None, title_key: str | None) -> threading.Lock:
        """The lock of creates landing in this parent with titles of this title_group_key."""
        with self.lock:
            return self.create_locks[(try_normal_id(parent) or parent or "", title_key or "")]

    def stop(self, cause: BaseException) -> None:
        """Ask every worker to stop taking new units because of cause (a refused token, Ctrl-C...)."""
        self.abort(cause)
