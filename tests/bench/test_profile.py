"""bench.profile: a py-spy raw profile's costs without the waits (locks, sleeps, sockets), and their growth
per item; bench.child's wait for py-spy to attach, which raises what py-spy said when it did not."""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.child import _attached
from bench.profile import costs, growth, is_wait
from videoferry.connectors.limiter_windows import sleep_until_room
from videoferry.core.transaction import immediate
from videoferry.state.db import LedgerDB

ROUND = "Schedule.run (videoferry/tasks/scheduling.py:93)"
COUNTS = "counts (videoferry/state/queries.py:124)"
CALL = "Transport.call (videoferry/connectors/client/transport.py:296)"


def _raw(path: Path, rows: dict[tuple[str, ...], int]) -> Path:
    path.write_text("".join(f"{';'.join(stack)} {n}\n" for stack, n in rows.items()))
    return path


def _frame(function: Callable[..., object], text: str, name: str, path: str) -> str:
    """py-spy's frame for the first line of `function` holding `text`, in the source imported here."""
    lines, start = inspect.getsourcelines(inspect.unwrap(function))
    at = next(start + i for i, line in enumerate(lines) if text in line)
    return f"{name} ({path}:{at})"


LOCK = _frame(LedgerDB.write, "with self.lock:", "LedgerDB.write", "videoferry/state/db.py")
SLEEP = _frame(
    sleep_until_room, "time.sleep(", "sleep_until_room", "videoferry/connectors/limiter_windows.py"
)
COMMIT = _frame(immediate, '"COMMIT"', "immediate", "videoferry/core/transaction.py")


def test_costs_leave_out_the_waits(tmp_path: Path) -> None:
    raw = _raw(tmp_path / "p", {(ROUND, COUNTS): 30, (CALL,): 50, (CALL, LOCK): 400, (CALL, SLEEP): 70})
    inclusive, own, total = costs(raw)
    assert total == 80
    assert own[COUNTS] == 30 and own[CALL] == 50 and LOCK not in own and SLEEP not in own
    assert inclusive[CALL] == 50 and inclusive[ROUND] == 30


def test_a_wait_is_told_by_its_lines_text_wherever_it_is() -> None:
    # Ours (the ledger's lock, the limiter's sleep) and the standard library's (a condition's acquire, an idle
    # pool worker), found at the lines this Python has; the COMMIT beside them is work, as is a line of a
    # file that is not there or a frame that names no line.
    wait = _frame(threading.Condition.wait, "waiter.acquire()", "Condition.wait", "threading.py")
    from concurrent.futures import thread

    idle = _frame(thread._worker, "get(block=True)", "_worker", "concurrent/futures/thread.py")
    assert [is_wait(f) for f in (LOCK, SLEEP, wait, idle)] == [True] * 4
    assert not is_wait(COMMIT)
    assert not is_wait("gone (videoferry/no_such_module.py:3)") and not is_wait("<native>")


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
