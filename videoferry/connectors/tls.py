"""One TLS context for every HTTP client of the process: building one reads the CA bundle (~30 ms each)."""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's TLS context, made on first use as httpx makes its default one (certifi's CA bundle, or
    SSL_CERT_FILE / SSL_CERT_DIR when set): certificates are verified exactly as before, the bundle is read
    once instead of by every client (a run opens several: the API, the upload host, tus, downloads, checks).
    An SSLContext may be shared by clients and threads."""
    return httpx.create_ssl_context()
