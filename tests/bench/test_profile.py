"""bench.profile: a py-spy raw profile's costs without the ledger's lock waits, and their growth per item;
bench.child's wait for py-spy to attach, which raises what py-spy said when it did not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.child import _attached
from bench.profile import WAITS, costs, growth

ROUND = "Schedule.run (videoferry/tasks/scheduling.py:93)"
COUNTS = "counts (videoferry/state/queries.py:124)"
CALL = "Transport.call (videoferry/connectors/client/transport.py:296)"


def _raw(path: Path, rows: dict[tuple[str, ...], int]) -> Path:
    path.write_text("".join(f"{';'.join(stack)} {n}\n" for stack, n in rows.items()))
    return path


def test_costs_leave_out_the_lock_waits(tmp_path: Path) -> None:
    raw = _raw(tmp_path / "p", {(ROUND, COUNTS): 30, (CALL,): 50, (CALL, WAITS[0]): 400})
    inclusive, own, total = costs(raw)
    assert total == 80
    assert own[COUNTS] == 30 and own[CALL] == 50 and WAITS[0] not in own
    assert inclusive[CALL] == 50 and inclusive[ROUND] == 30


def test_the_lock_waits_are_the_ledger_locks_lines() -> None:
    # Each frame left out is the line where LedgerDB.write or .read waits for the lock, wherever db.py has it.
    source = (Path(__file__).parents[2] / "videoferry" / "state" / "db.py").read_text().splitlines()
    assert [w.split(" (")[0] for w in WAITS] == ["LedgerDB.write", "LedgerDB.read"]
    for frame in WAITS:
        line = int(frame.rsplit(":", 1)[1].rstrip(")"))
        assert source[line - 1].strip() == "with self.lock:", frame


def test_growth_is_per_item_and_puts_what_grows_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 5k items: 10 samples of counts, 500 of calls; 20k items: 400 of counts (O(n) per round), 2000 of calls.
    small = _raw(tmp_path / "small", {(ROUND, COUNTS): 10, (CALL,): 500})
    big = _raw(tmp_path / "big", {(ROUND, COUNTS): 400, (CALL,): 2000})
    growth((small, 5000), (big, 20000), 2)
    own = capsys.readouterr().out.split("# own")[1].splitlines()[1:]
    assert own[0].split() == ["2.0", "->", "20.0", "(", "+18.0)", *COUNTS.split()]
    assert own[1].split()[:3] == ["100.0", "->", "100.0"]  # the calls: flat per item


def test_attach_failure_raises_what_py_spy_said(tmp_path: Path) -> None:
    """py-spy on a process that is not Python (here `sleep`) exits at once; the job must not start blind."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        pytest.skip("py-spy is not installed (dev extras)")
    target = subprocess.Popen(["sleep", "30"])
    log = tmp_path / "spy.log"
    try:
        with log.open("w") as err:
            proc = subprocess.Popen(
                [str(spy), "record", "--pid", str(target.pid), "-o", str(tmp_path / "out")],
                stdout=err,
                stderr=subprocess.STDOUT,
            )
        with pytest.raises(RuntimeError, match="py-spy did not attach .*: Error: "):
            _attached(log, proc, 30.0)
    finally:
        target.kill()
        target.wait()
