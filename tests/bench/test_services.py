"""The benchmarks' moto server keeps its objects' bytes where moto_tmp says, and leaves nothing in memory."""

from __future__ import annotations

import os
from pathlib import Path

import boto3

from bench.services import MEMORY_TMP, MotoProcess, moto_tmp


def test_moto_writes_its_objects_where_moto_tmp_says_and_an_in_memory_place_goes_with_it(
    tmp_path: Path,
) -> None:
    with MotoProcess(tmp_path) as moto:
        assert moto.tmp is not None and moto.tmp.is_dir()
        place, in_memory = moto.tmp, moto.tmp_in_memory
        assert place.is_relative_to(MEMORY_TMP) == in_memory
        if not in_memory:
            assert place == tmp_path / "moto-tmp"
        s3 = boto3.client(
            "s3",
            endpoint_url=moto.endpoint,
            region_name="us-east-1",
            aws_access_key_id=moto.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=moto.env["AWS_SECRET_ACCESS_KEY"],
        )
        s3.create_bucket(Bucket="tmp-check")
        s3.put_object(Bucket="tmp-check", Key="big.bin", Body=os.urandom(20 * 1024 * 1024))
        # An object beyond moto's in-memory buffer goes to a temporary file there (unnamed, held open).
        assert str(place) in " ".join(_open_files(moto.pid))
    assert not in_memory or not place.exists()


def test_moto_tmp_falls_back_to_the_work_directory_or_a_fresh_place_in_memory(tmp_path: Path) -> None:
    first, in_memory = moto_tmp(tmp_path)
    second, _ = moto_tmp(tmp_path)
    try:
        if in_memory:
            assert first != second and first.parent == MEMORY_TMP  # one place per server
        else:
            assert first == second == tmp_path / "moto-tmp"
    finally:
        if in_memory:
            first.rmdir()
            second.rmdir()


def _open_files(pid: int) -> list[str]:
    """What a process's open descriptors point to (Linux /proc)."""
    fds = Path(f"/proc/{pid}/fd")
    return [os.readlink(fd) for fd in fds.iterdir() if fd.is_symlink()]
