"""An S3 server of its own process (moto), to be frozen (SIGSTOP) and thawed mid-run: what an S3 outage
looks like to a holder, with requests accepted by the kernel and answered only after the thaw."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import httpx
import pytest

from tests.connectors.waiting import poll
from tests.flows.helpers import free_port


@dataclass
class FrozenS3:
    """A moto S3 server process: its endpoint and one bucket; freeze() / thaw() stop and continue it."""

    proc: subprocess.Popen[bytes]
    endpoint: str
    bucket: str

    def freeze(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)


def _answers(endpoint: str) -> bool:
    try:
        return httpx.get(endpoint, timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


@pytest.fixture()
def frozen_s3(s3_server: str) -> Iterator[FrozenS3]:
    """A moto server process on a free loopback port (fake credentials: the s3_server fixture's) with a
    bucket; killed afterwards (thawed first, whatever the test left it in)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        poll(lambda: _answers(endpoint), 60, "the moto server process to answer")
        s3 = boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1")
        s3.create_bucket(Bucket="vf-frozen")
        yield FrozenS3(proc, endpoint, "vf-frozen")
    finally:
        try:
            os.kill(proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        proc.kill()
        proc.wait(30)
