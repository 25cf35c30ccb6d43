"""Prefect's temporary server, started in the background while the command makes its first calls."""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)


class ServerWarmup:
    """Starts Prefect's temporary API server in a thread (only when no PREFECT_API_URL is configured).

    The server takes seconds to start (a second interpreter importing the Prefect server). Meanwhile the
    command checks the token with its first API call; in a run the per-minute limit binds, the calls of the
    first minute need half of it, so that start costs nothing at the end. join() before the flow runs:
    Prefect marks the server running as soon as it starts it, and a flow that came in between would reach
    for a server that does not answer yet.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self) -> ServerWarmup:
        """Begin starting the server (no-op when Prefect is configured to use another server)."""
        if os.environ.get("PREFECT_API_URL"):
            return self
        self._thread = threading.Thread(target=self._run, name="prefect-server-warmup", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

            if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
                return  # a profile names a server, or temporary servers are off: Prefect decides as usual
            from prefect.server.api.server import SubprocessASGIServer

            SubprocessASGIServer().start()
        except BaseException as exc:  # the flow run starts the server itself and reports its failure
            log.debug("starting Prefect's temporary server in the background failed: %s", type(exc).__name__)

    def join(self) -> None:
        """Wait until the server answers (or the attempt ended)."""
        if self._thread is not None:
            self._thread.join()
