"""What a run's init answers name (the video, or a session): learned by one probe no create waits for."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Unconfirmed:
    """An init answer recorded before the probe settled: its id, and the intent of the create it answered."""

    key: str
    init_id: str
    intent_at: datetime | None


@dataclass
class InitIds:
    """Whether init answers name the video (True) or an upload session (False), None until one GET told.

    One creator at a time probes (a GET of its own init answer's id: create.learn_init_ids); every other
    create goes on meanwhile, recording its answer as "not known to be a video id" (its video is found by
    listing, as when the probe fails) and noting it here. Once a probe says True, those noted answers are
    the items' video ids (taken by the prober); once it says False, they are forgotten.
    """

    is_video: bool | None = None
    _probing: bool = False
    _unconfirmed: list[Unconfirmed] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, answer: Unconfirmed) -> tuple[bool | None, bool]:
        """Note an answer recorded without a video id; (the verdict, whether the caller is to probe now).

        With a verdict known already, nothing is noted (True: the caller records the id itself). Otherwise the
        answer waits for the verdict, and the caller probes when nobody else is probing.
        """
        with self._lock:
            if self.is_video is not None:
                return self.is_video, False
            self._unconfirmed.append(answer)
            if self._probing:
                return None, False
            self._probing = True
            return None, True

    def settle(self, verdict: bool | None) -> list[Unconfirmed]:
        """The probe's end: its verdict (None: it failed, the next create probes); the answers it confirms."""
        with self._lock:
            self._probing = False
            if verdict is None:
                return []
            self.is_video = verdict
            confirmed, self._unconfirmed = self._unconfirmed, []
            return confirmed if verdict else []
