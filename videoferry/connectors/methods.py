"""HTTP methods the spec does not show: the plausible pair per operation, learned from a 405 and kept."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

#: operation -> (what we try first, the other plausible method). The spec marks these methods "?".
PLAUSIBLE: dict[str, tuple[str, str]] = {
    "update_video": ("PATCH", "PUT"),
    "delete_video": ("DELETE", "POST"),
    "move_video": ("POST", "PUT"),
    "copy_video": ("POST", "PUT"),
    "cut_video": ("POST", "PUT"),
    "concat_video": ("POST", "PUT"),
    "set_chapters": ("PUT", "POST"),
    "upload_single": ("POST", "PUT"),
    "import_url": ("POST", "PUT"),
}
#: Operations that share one endpoint (and so one method): /v2/video serves both uploads.
_SAME_ENDPOINT = {"import_url": "upload_single"}


class MethodBook:
    """The method in use for each operation whose method is not shown; thread-safe, one per client.

    A 405 means the service refused before doing anything, so the same request is sent once with the other
    plausible method, even for a create; the one that worked is used for the rest of the client's life.
    """

    def __init__(self) -> None:
        self._learned: dict[str, str] = {}
        self._lock = threading.Lock()

    def method(self, operation: str, default: str) -> str:
        """The method to send: what was learned, else the first plausible one, else default."""
        endpoint = _SAME_ENDPOINT.get(operation, operation)
        with self._lock:
            learned = self._learned.get(endpoint)
        if learned is not None:
            return learned
        pair = PLAUSIBLE.get(endpoint)
        return pair[0] if pair else default

    def other(self, operation: str, refused: str) -> str | None:
        """The other plausible method after `refused` answered 405 (None: the spec shows this one)."""
        pair = PLAUSIBLE.get(_SAME_ENDPOINT.get(operation, operation))
        if pair is None or refused not in pair:
            return None
        return pair[1] if refused == pair[0] else pair[0]

    def learn(self, operation: str, method: str) -> None:
        """Remember that `method` works for the operation (logged once)."""
        endpoint = _SAME_ENDPOINT.get(operation, operation)
        with self._lock:
            if self._learned.get(endpoint) == method:
                return
            self._learned[endpoint] = method
        log.info("the service takes %s for %s (learned from a 405)", method, endpoint)

    def snapshot(self) -> dict[str, str]:
        """operation -> method in use, for every operation whose method is not shown."""
        return {op: self.method(op, PLAUSIBLE[op][0]) for op in PLAUSIBLE}
