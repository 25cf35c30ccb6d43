"""store_plan: the rows of done or finished items are counted, not made into specs, as plan() counts them."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from videoferry.state import Ledger
from videoferry.tasks.migrate.plan import Plan, read_plan, store_plan

PARENT = "19a68028-c230-464a-9e28-c407aea46bfc"


def _inventory(path: Path, titles: dict[int, str], rows: int) -> str:
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["source", "title", "parent_id"])
        for i in range(rows):
            writer.writerow([f"/videos/clip-{i}.mp4", titles.get(i, f"Clip {i}"), PARENT])
    return str(path)


def _read(path: str, shard: tuple[int, int] | None = None) -> Plan:
    return read_plan(path, parent_id=None, via="tus", s3=None, shard=shard)


def _complete(ledger: Ledger, run_id: str, key: str, state: str) -> None:
    """planned -> processing -> done (-> finished) through the ledger's own steps."""
    ledger.begin_create(key, run_id, "sent")
    ledger.create_accepted(key, run_id, f"vid-{key}")
    ledger.set_status(key, run_id, "done")
    if state == "finished":
        ledger.finished(key, run_id)


@pytest.mark.parametrize("shard", [None, (1, 2), (2, 2)])
def test_complete_rows_count_as_plan_counts_them(tmp_path: Path, shard: tuple[int, int] | None) -> None:
    first = _read(_inventory(tmp_path / "a.csv", {}, 8))
    keys = [s.key for s in first.specs()]
    assert first.keys() == keys and [s.key for s in first.specs(skip={keys[0], keys[5]})] == [
        k for k in keys if k not in (keys[0], keys[5])
    ]
    path = tmp_path / "ledger.db"
    with Ledger.open(path) as ledger:
        run = ledger.start_run("migrate", {})
        assert store_plan(first, ledger, run).added == 8
        for n, key in enumerate(keys[:4]):
            _complete(ledger, run, key, "finished" if n % 2 else "done")
        ledger.finish_run(run, "succeeded")
    shutil.copy(path, tmp_path / "copy.db")
    # Again: a finished row's title changed (not applied), a planned row's too (applied), one row more.
    again = _inventory(tmp_path / "b.csv", {1: "Changed 1", 6: "Changed 6"}, 9)
    results, titles = [], []
    for ledger_path, store in ((path, True), (tmp_path / "copy.db", False)):
        with Ledger.open(ledger_path) as ledger:
            run = ledger.start_run("migrate", {})
            plan = _read(again, shard)
            results.append(store_plan(plan, ledger, run) if store else ledger.plan(plan.specs(), run))
            titles.append({i.key: i.spec.title for i in ledger.items()})
            if store:
                assert plan.already_done == results[0].already_done
    assert results[0] == results[1] and titles[0] == titles[1]  # exactly what plan() does with every spec
    if shard is None:
        assert (results[0].added, results[0].updated, results[0].already_done) == (1, 1, 4)
        assert titles[0][keys[1]] == "Clip 1" and titles[0][keys[6]] == "Changed 6"
