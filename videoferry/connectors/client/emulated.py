"""Whether the client talks to videoferry's emulator: a loopback address whose answers say they are its."""

from __future__ import annotations

import ipaddress

import httpx

__all__ = ["EMULATOR_HEADER", "is_loopback", "says_emulator"]

#: Not in the spec: the header every answer of the emulator (emulator/app.py) carries. Believed only from a
#: loopback address, where the real service never is; a proxy or another server elsewhere is never taken for
#: the emulator, whatever it sends.
EMULATOR_HEADER = "x-videoferry-emulator"


def is_loopback(url: str) -> bool:
    """Whether the URL's host is this machine (localhost, 127.0.0.0/8, ::1)."""
    host = httpx.URL(url).host
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def says_emulator(response: httpx.Response) -> bool:
    """Whether an answer says it comes from the emulator (EMULATOR_HEADER); the address is checked apart."""
    return response.headers.get(EMULATOR_HEADER) == "1"
