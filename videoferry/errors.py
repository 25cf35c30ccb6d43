"""The exceptions the Python API raises: one tree under VideoferryError, each with its exit status."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ConfigurationError", "RunStopped", "VideoferryError", "raised"]


class VideoferryError(Exception):
    """Root of every exception the API raises; exit_code is what the command line would exit with. The
    exception that caused it is its __cause__. A run that did not do everything raises nothing: its
    outcome says so (exit_code 1, failed)."""

    exit_code: int = 1


class ConfigurationError(VideoferryError, ValueError):
    """Configuration to fix before anything runs (exit status 2): an option out of bounds or unknown, a
    variable or block missing, the token refused, an input file unreadable, the ledger held by another run."""

    exit_code = 2


class RunStopped(VideoferryError):
    """The run stopped before its end (exit status 1): the service silent for its bound, the remote ledger's
    lease lost, the service's own error; what was done is recorded, and the same call again resumes."""

    exit_code = 1


@contextmanager
def raised() -> Iterator[None]:
    """Turn what a job raises into the tree (flows.job.exit_for's map); Ctrl-C (KeyboardInterrupt) and an
    error of videoferry itself (a bug) go on up as they are."""
    try:
        yield
    except Exception as exc:
        from videoferry.flows.job import Exit, exit_for

        mapped = exit_for(exc)
        if mapped is None:
            raise
        code, message = mapped
        kind = ConfigurationError if code == Exit.CONFIG else RunStopped
        raise kind(message) from exc
