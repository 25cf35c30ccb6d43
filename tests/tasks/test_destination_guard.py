"""A destination's guard against moto's S3 server and a folder: a write it refuses leaves nothing, in S3
refused as the signed request is about to leave (botocore's before-send)."""

from __future__ import annotations

from pathlib import Path

import pytest

from videoferry.connectors.ledger_errors import RemoteLedgerLostError
from videoferry.connectors.s3 import S3Config
from videoferry.tasks.destination import Destination, open_destination


def closed() -> None:
    raise RemoteLedgerLostError("ledger s3://b/k: this run could not renew its lease")


@pytest.fixture(params=["s3", "folder"])
def dest(request: pytest.FixtureRequest, tmp_path: Path) -> Destination:
    if request.param == "folder":
        return open_destination(str(tmp_path / "out"))
    s3_server = request.getfixturevalue("s3_server")
    bucket = request.getfixturevalue("s3_bucket")
    return open_destination(f"s3://{bucket}/b/", s3=S3Config(endpoint_url=s3_server), part_size=5 * 2**20)


def test_a_closed_guard_refuses_every_write_and_leaves_nothing(dest: Destination) -> None:
    kept, whole, streamed = dest.key("kept.json"), dest.key("whole.json"), dest.key("streamed.bin")
    dest.put_bytes(kept, b"{}", "application/json")  # the default guard lets everything through
    dest.guard = closed
    with pytest.raises(RemoteLedgerLostError):
        dest.put_bytes(whole, b"{}", "application/json")
    writer = dest.writer(streamed, None)
    writer.write(b"x" * 1024)
    with pytest.raises(RemoteLedgerLostError):
        writer.commit()
    writer.abort()
    with pytest.raises(RemoteLedgerLostError):
        dest.delete(kept)
    assert dest.stat(whole) is None and dest.stat(streamed) is None
    assert dest.stat(kept) is not None
    dest.guard = lambda: None
    dest.put_bytes(whole, b"{}", "application/json")  # the hook passes again once the guard does
    assert dest.stat(whole) is not None
