"""The process's one TLS context: made once, and it verifies certificates and host names as httpx's own."""

from __future__ import annotations

import ssl

import httpx

from videoferry.connectors.tls import tls_context


def test_one_context_that_verifies_like_httpx_default() -> None:
    shared = tls_context()
    assert tls_context() is shared  # the CA bundle is read once, not by every client
    default = httpx.create_ssl_context()
    assert shared.verify_mode == default.verify_mode == ssl.CERT_REQUIRED
    assert shared.check_hostname and default.check_hostname
    assert len(shared.get_ca_certs()) == len(default.get_ca_certs()) > 0
