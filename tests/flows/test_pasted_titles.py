"""Issue 26's case: titles a person pasted, a service that keeps them in another form, create answers lost.

12 files: "  Café " in decomposed form, "Lecture  001\\t part", long titles alike in their first 128
characters (the stand-in's cap), tags in mixed case with duplicates, chapter titles with spaces around them.
The service tidies titles and descriptions, cuts titles to 128 characters, lower-cases and deduplicates tags,
trims chapter titles; some create answers are lost after the service committed them. Both the run and its
rerun end within RUN_BOUND_SECONDS (the command is killed and the test fails otherwise), and the service ends
with exactly one video per row, each holding its row's bytes, its title as the service keeps it, the cut
titles said once as warnings.
"""

from __future__ import annotations

import json
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.flows.bounds import RUN_BOUND_SECONDS
from tests.flows.helpers import cli_env, migrate_args, run_cli, write_inventory
from tests.flows.test_variants_migrate import LOST_CREATES, md5_of
from videoferry.core.tidy import same_chapters, same_tags, same_title, title_cut
from videoferry.emulator.control import EmulatorControl, Workspace

#: The variants of a service that keeps text in another form than it was sent (emulator/README.md).
TIDYING = ["tidy-text", "title-cap", "tags-tidy", "chapter-titles-trimmed"]
#: Long titles alike in their first 128 characters: the service cuts them to the same title.
LONG_HEAD = "The complete lecture series on the history of video compression, recorded in the main hall " * 2


def pasted_titles() -> list[str]:
    """12 titles as a person pastes them."""
    titles = [
        "  " + unicodedata.normalize("NFD", "Café") + " ",  # decomposed, spaces around
        "Lecture  001\t part",  # a double space and a tab
        "Lecture 001 part",  # what the service keeps of the one before
    ]
    titles += [f"{LONG_HEAD[:130]} part {n}" for n in range(1, 5)]  # alike in their first 128 characters
    titles += [f"Talk {n}\u00a0 — overview " for n in range(5)]  # NBSP, trailing space
    assert len(titles) == 12 and len({t[:128] for t in titles[3:7]}) == 1
    return titles


def _rows(clip_factory: Any) -> list[dict[str, Any]]:
    rows = []
    for i, title in enumerate(pasted_titles()):
        clip = clip_factory(0.5 + 0.1 * (i % 4), width=160 + 16 * (i % 3), name=f"c{i}.mp4")
        row: dict[str, Any] = {"source": str(clip), "title": title}
        if i % 3 == 0:
            row["tags"] = "News; news ;2026"
            row["chapters"] = json.dumps([{"time": 0, "title": " Start "}, {"time": 0.25, "title": "Next\t"}])
        rows.append(row)
    return rows


def _migrate(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One run of the command, killed (and the test failed) when it outlives RUN_BOUND_SECONDS."""
    try:
        return run_cli(args, env, timeout=RUN_BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run was still going after {RUN_BOUND_SECONDS:g} s (its stated bound)")


@pytest.mark.parametrize("via", ["tus", "single"])
def test_pasted_titles_under_a_tidying_service_with_lost_answers(
    via: str, tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    rows = _rows(clip_factory)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    emu_control.set_variants(emu, TIDYING)
    emu_control.set_faults(
        emu,
        [{"kind": "drop_after_commit", "method": "POST", "path": LOST_CREATES, "rate": 0.4}],
        seed=26,
    )
    ledger = tmp_path / "ledger.db"
    args = [*migrate_args(emu, inventory, ledger, transfers=4, wait_timeout=40), "--via", via]
    args += ["--report", str(tmp_path / "report")]
    first = _migrate(args, cli_env(emu))
    assert first.returncode in (0, 1), first.stderr  # an item out of create attempts: the rerun finishes it
    emu_control.clear_faults(emu)
    second = _migrate(args, cli_env(emu))
    assert second.returncode == 0, second.stdout + second.stderr

    videos = emu_control.videos(emu)
    assert len(videos) == len(rows), sorted(v["title"] for v in videos)
    by_md5 = {v["md5"]: v for v in videos}
    cut = 0
    for row in rows:
        video = by_md5[md5_of(Path(row["source"]))]
        assert video["status"] == "done"
        assert same_title(row["title"], video["title"]), (row["title"], video["title"])
        cut += title_cut(row["title"], video["title"])
        if row.get("tags"):
            assert same_tags(["News", "news", "2026"], video["tags"]), video["tags"]
            stored = [(c["time"], c["title"]) for c in video["chapters"]["items"]]
            assert same_chapters([(0, " Start "), (250, "Next\t")], stored), stored
    assert cut == 4  # the long titles, cut to the service's cap
    # Said once each, as warnings in the summary and the report; never sent again.
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    warnings = report["summary"]["warnings"]
    assert len(warnings) == 4 and all("title cut by the service" in w["message"] for w in warnings)
    assert "warnings: 4" in second.stdout + second.stderr
    updates = [
        r
        for r in emu_control.requests(emu.workspace_id)
        if r["method"] in ("PATCH", "PUT")
        and r["path"].startswith("/v1/videos/")
        and not r["path"].endswith("/chapters")
        and r["status"] < 300
    ]
    assert len(updates) <= len(rows)  # the finish step's one update per item at most: nothing re-sent
