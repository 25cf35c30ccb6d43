"""Logging filters that apply core/redact.py's rules to httpx's and boto's own log records."""

from __future__ import annotations

import logging
import threading

import httpx

from videoferry.core.redact import log_url, scrub_aws

__all__ = ["BOTO_LOGGERS", "install_httpx_redaction", "install_boto_redaction"]


class _HttpxUrlFilter(logging.Filter):
    """Rewrites the URL argument of httpx's "HTTP Request: %s %s ..." records."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 2 and isinstance(args[1], httpx.URL | str):
            record.args = (args[0], log_url(args[1]), *args[2:])
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


#: Loggers of boto's stack whose DEBUG records print signed requests (signatures, keys, session tokens).
BOTO_LOGGERS = (
    "botocore.auth",
    "botocore.endpoint",
    "botocore.httpsession",
    "botocore.parsers",
    "botocore.hooks",
    "botocore.regions",
    "urllib3.connectionpool",
)
_SIGNING_STEPS = ("CanonicalRequest", "StringToSign", "Signature", "String to sign")


class _BotoSecretFilter(logging.Filter):
    """Rewrites boto's DEBUG records so no signature, access key id or session token is ever logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "botocore.auth" and str(record.msg).startswith(_SIGNING_STEPS):
            return False  # the canonical request, string to sign and signature: signing internals only
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is dropped, not risked
            return False
        scrubbed = scrub_aws(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        return True


_boto_installed = False


def install_boto_redaction() -> None:
    """Install the filter on boto's and urllib3's loggers once per process (idempotent)."""
    global _boto_installed
    with _lock:
        if _boto_installed:
            return
        secret_filter = _BotoSecretFilter()
        for name in BOTO_LOGGERS:
            logging.getLogger(name).addFilter(secret_filter)
        _boto_installed = True
