"""The ledger file: 0600 modes, WAL, schema checks, bad files, write locks and the run lock."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.state.helpers import drive, shared_lock_held, spec
from videoferry.state import Ledger, LedgerBusyError, LedgerError
from videoferry.state.schema import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture()
def permissive_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_new_ledger_is_0600_with_wal_files_too(ledger_path: Path, permissive_umask: None) -> None:
    with Ledger.open(ledger_path) as ledger:
        run = ledger.start_run("migrate", {})
        drive(ledger, "k", "uploading", run)  # writes: the -wal and -shm files exist now
        wal = ledger_path.with_name(ledger_path.name + "-wal")
        shm = ledger_path.with_name(ledger_path.name + "-shm")
        assert wal.exists() and shm.exists()
        for path in (ledger_path, wal, shm, ledger_path.with_name(ledger_path.name + ".lock")):
            assert _mode(path) == 0o600, path


def test_existing_loose_file_is_tightened(ledger_path: Path) -> None:
    Ledger.open(ledger_path).close()
    ledger_path.chmod(0o644)
    Ledger.open(ledger_path).close()
    assert _mode(ledger_path) == 0o600


def test_wal_mode_and_schema_version(ledger: Ledger, ledger_path: Path) -> None:
    conn = sqlite3.connect(ledger_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert int(version) == SCHEMA_VERSION
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"runs", "items", "ops", "events", "meta"} <= tables
    finally:
        conn.close()


def test_not_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is an inventory, not a ledger\n" * 20)
    with pytest.raises(LedgerError) as caught:
        Ledger.open(path)
    assert str(path) in str(caught.value) and "not a valid videoferry ledger" in str(caught.value)


@pytest.mark.parametrize("where", ["schema page", "data page"])
def test_corrupt_ledger(ledger_path: Path, where: str) -> None:
    with Ledger.open(ledger_path) as ledger:
        ledger.plan([spec(f"k{i}", i) for i in range(3000)], None)
    data = bytearray(ledger_path.read_bytes())
    pages = len(data) // 4096
    assert pages > 10
    start = 100 if where == "schema page" else 4096 * (pages // 2) + 10  # after the header / mid-file
    data[start : start + 3000] = b"\x5a" * 3000
    ledger_path.write_bytes(bytes(data))
    with pytest.raises(LedgerError) as caught:
        Ledger.open(ledger_path)
    assert str(ledger_path) in str(caught.value) and "not a valid videoferry ledger" in str(caught.value)


def test_sqlite_file_of_another_application(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="another application"):
        Ledger.open(path)


def test_newer_schema_refused(ledger_path: Path) -> None:
    Ledger.open(ledger_path).close()
    conn = sqlite3.connect(ledger_path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="newer videoferry"):
        Ledger.open(ledger_path)


def _make_older(path: Path, version: int) -> None:
    """Turn a current ledger file into the file an older videoferry wrote (schema `version`)."""
    conn = sqlite3.connect(path)
    if version < 5:
        conn.execute("ALTER TABLE items DROP COLUMN attachments")
    if version < 4:
        conn.execute("DROP TABLE units")
    if version < 3:
        conn.execute("DROP INDEX ops_target")
        conn.execute("DROP INDEX ops_created")
        for column in ("target_kind", "target_id", "created_kind", "created_id"):
            conn.execute(f"ALTER TABLE ops DROP COLUMN {column}")
    if version < 2:
        conn.execute("ALTER TABLE items DROP COLUMN source_version")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    conn.commit()
    conn.close()


def _stored_version(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        conn.close()


def test_schema_1_is_upgraded_with_source_versions(ledger_path: Path) -> None:
    ledger = Ledger.open(ledger_path)
    run_id = ledger.start_run("test", {})
    ledger.plan([spec("a")], run_id)
    ledger.close()
    _make_older(ledger_path, 1)
    ledger = Ledger.open(ledger_path)
    try:
        item = ledger.get("a")
        assert item is not None and item.source_version is None
        run_id = ledger.start_run("test", {})
        ledger.begin_create("a", run_id, "title", source_version="10:123")
        item = ledger.get("a")
        assert item is not None and item.source_version == "10:123"
    finally:
        ledger.close()
    assert _stored_version(ledger_path) == str(SCHEMA_VERSION) == "5"


def test_schema_2_is_upgraded_with_op_targets(ledger_path: Path) -> None:
    ledger = Ledger.open(ledger_path)
    run_id = ledger.start_run("test", {})
    drive(ledger, "a", "done", run_id)
    on_video = ledger.record_op_intent("a", "chapters", {"chapters": []}, run_id=run_id, video_id="vid-a")
    ledger.record_op_outcome(on_video, "done")
    no_target = ledger.record_op_intent(None, "update", {}, run_id=run_id)
    ledger.close()
    _make_older(ledger_path, 2)
    conn = sqlite3.connect(ledger_path)
    columns = {r[1] for r in conn.execute("PRAGMA table_info(ops)")}
    conn.close()
    assert "target_id" not in columns and "created_id" not in columns  # a real version-2 file
    ledger = Ledger.open(ledger_path)
    try:
        old = ledger.get_op(on_video)
        assert old is not None and (old.target_kind, old.target_id, old.video_id) == (
            "video",
            "vid-a",
            "vid-a",
        )
        assert (old.created_kind, old.created_id, old.status) == (None, None, "done")
        bare = ledger.get_op(no_target)
        assert bare is not None and (bare.target_kind, bare.target_id) == (None, None)
        run_id = ledger.start_run("test", {})
        op = ledger.record_op_intent(
            None, "archive", {"name": "Talk"}, run_id=run_id, target_kind="stream", target_id="s-1"
        )
        ledger.record_op_outcome(op, "done", created_id="vid-new")
        made = ledger.get_op(op)
        assert made is not None and (made.created_kind, made.created_id) == ("video", "vid-new")
        assert [o.op_id for o in ledger.ops(created_id="vid-new")] == [op]
    finally:
        ledger.close()
    assert _stored_version(ledger_path) == str(SCHEMA_VERSION)
    with Ledger.open(ledger_path) as again:  # a current file opens as it is
        assert again.get_op(op) == made


def test_schema_4_is_upgraded_with_attachments(ledger_path: Path) -> None:
    ledger = Ledger.open(ledger_path)
    run_id = ledger.start_run("test", {})
    ledger.plan([spec("a")], run_id)
    ledger.close()
    _make_older(ledger_path, 4)
    ledger = Ledger.open(ledger_path)
    try:
        item = ledger.get("a")
        assert item is not None and item.spec.attachments == () and not item.meta_pending
        run_id = ledger.start_run("test", {})
        ledger.plan([replace(spec("a"), attachments=("/m/slides.pdf", "s3://b/notes.txt"))], run_id)
        item = ledger.get("a")
        assert item is not None and item.spec.attachments == ("/m/slides.pdf", "s3://b/notes.txt")
        assert item.meta_pending  # the finish step owes the materials
    finally:
        ledger.close()
    assert _stored_version(ledger_path) == str(SCHEMA_VERSION) == "5"


def test_missing_ledger_without_create(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger.open(path, create=False)
    assert not path.exists()


def test_second_run_refused_while_first_runs(ledger_path: Path) -> None:
    first = Ledger.open(ledger_path)
    second = Ledger.open(ledger_path)
    try:
        run = first.start_run("migrate", {})
        with pytest.raises(LedgerBusyError) as caught:
            second.start_run("migrate", {})
        assert str(ledger_path) in str(caught.value) and run in str(caught.value)
        assert second.counts()["planned"] == 0  # reading needs no run lock
        first.finish_run(run, "succeeded", {"items": 0})
        again = second.start_run("migrate", {})
        assert second.get_run(again) is not None and second.get_run(run).status == "succeeded"  # type: ignore[union-attr]
    finally:
        first.close()
        second.close()


_HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO meta (key, value) VALUES ('held', 'yes')")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_held_write_lock_gives_busy_error(ledger_path: Path) -> None:
    Ledger.open(ledger_path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(ledger_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with Ledger.open(ledger_path, busy_timeout=0.2) as ledger:
            assert ledger.counts()["planned"] == 0  # WAL: readers are not blocked
            with pytest.raises(LedgerBusyError) as caught:
                ledger.start_run("migrate", {})
            assert str(ledger_path) in str(caught.value) and "another run" in str(caught.value)
            assert ledger.run_id is None
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=10)
    with Ledger.open(ledger_path) as ledger:  # the run lock was given back on failure
        run = ledger.start_run("migrate", {})
        assert ledger.runs()[-1].run_id == run


def test_run_params_drop_secret_keys(ledger: Ledger) -> None:
    run = ledger.start_run(
        "migrate",
        {
            "transfers": 4,
            "token": "T0KEN",
            "api_token": "x",
            "upload_endpoint": "e",
            "nested": {"password": "p"},
        },
    )
    stored = ledger.get_run(run)
    assert stored is not None
    assert stored.params == {"transfers": 4, "nested": {}}
    assert stored.pid == os.getpid() and stored.status == "running"


def test_stale_running_run_is_marked_interrupted(ledger_path: Path) -> None:
    script = (
        "import os, sys; sys.path.insert(0, sys.argv[2]); from videoferry.state import Ledger; "
        "l = Ledger.open(sys.argv[1]); l.start_run('migrate', {}); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", script, str(ledger_path), str(REPO)], check=True, timeout=60)
    with Ledger.open(ledger_path) as ledger:
        (crashed,) = ledger.runs()
        assert crashed.status == "running"
        run = ledger.start_run("migrate", {})
        assert ledger.get_run(crashed.run_id).status == "interrupted"  # type: ignore[union-attr]
        assert ledger.get_run(run).status == "running"  # type: ignore[union-attr]


def test_a_second_open_in_this_process_keeps_the_first_ones_lock(ledger_path: Path) -> None:
    # A second connection of the same process (the live progress display beside a run) must not close a
    # descriptor of the file of its own (a header read): that would drop the first one's POSIX locks, and
    # another process could then take itself for the last reader, checkpoint and remove the WAL under it.
    with Ledger.open(ledger_path) as first:
        first.plan([spec("k1", 1)], None)
        assert shared_lock_held(ledger_path)
        with Ledger.open(ledger_path, create=False) as second:
            assert second.counts()["planned"] == 1
            assert shared_lock_held(ledger_path)
        assert shared_lock_held(ledger_path), "the second one's close let the first one's lock go"
        assert first.counts()["planned"] == 1
    assert not shared_lock_held(ledger_path)
