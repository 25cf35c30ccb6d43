"""Keep secret URLs (upload endpoints, import URLs) out of httpx's own request log lines."""

from __future__ import annotations

import logging
import re
import threading

import httpx

__all__ = ["API_PATH", "redact_url", "install_httpx_redaction"]

#: Paths of plain API calls (safe to log). Any other path (an upload endpoint) is logged as its origin only.
API_PATH = re.compile(r"^/(v1/|v2/(init|video|poster)$|v2/live/|_emulator/)")


def redact_url(url: object) -> str:
    """The URL as it may be logged: API paths in full, any other path replaced by "<upload endpoint>"."""
    try:
        parsed = httpx.URL(str(url))
    except Exception:  # noqa: BLE001 - anything unparseable is fully hidden
        return "<url>"
    origin = f"{parsed.scheme}://{parsed.host}" + (f":{parsed.port}" if parsed.port else "")
    if API_PATH.match(parsed.path):
        return str(parsed)
    return f"{origin}/<upload endpoint>"


class _HttpxUrlFilter(logging.Filter):
    """Rewrites the URL argument of httpx's "HTTP Request: %s %s ..." records."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 2 and isinstance(args[1], httpx.URL | str):
            record.args = (args[0], redact_url(args[1]), *args[2:])
        return True


_installed = False
_lock = threading.Lock()


def install_httpx_redaction() -> None:
    """Install the filter on the "httpx" logger once per process (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        logging.getLogger("httpx").addFilter(_HttpxUrlFilter())
        _installed = True
