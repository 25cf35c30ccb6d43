"""The throughput benchmark's rounds run with this process on one core and the emulator on another, and this
process gets its cores back after them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.throughput import pinned


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores"
)
def test_the_rounds_are_pinned_apart_and_the_cores_given_back() -> None:
    before = os.sched_getaffinity(0)
    cores = sorted(before)
    # A stand-in for the emulator: a process with a second thread already running when it is pinned.
    code = "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); time.sleep(60)"
    other = subprocess.Popen([sys.executable, "-c", code])
    try:
        while len(os.listdir(f"/proc/{other.pid}/task")) < 2:  # bounded by the child's own 60 s
            assert other.poll() is None
        with pinned(other.pid) as placed:
            assert os.sched_getaffinity(0) == {cores[0]}
            tasks = [int(t) for t in os.listdir(f"/proc/{other.pid}/task")]
            assert {frozenset(os.sched_getaffinity(t)) for t in tasks} == {frozenset({cores[1]})}
            assert placed == f"this process pinned to core {cores[0]}, the emulator to core {cores[1]}"
        assert os.sched_getaffinity(0) == before
    finally:
        other.kill()
        other.wait(10)
