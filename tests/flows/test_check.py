"""videoferry check against the emulator: clean, changed behind the tool's back, a lost ledger adopted."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.flows.helpers import (
    api_calls,
    cli_env,
    clip_rows,
    creates,
    options,
    settings_for,
    write_inventory,
)
from videoferry.connectors.client import VideoClient
from videoferry.connectors.sources import open_source
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.check.options import CheckOptions
from videoferry.flows.check.runner import run_check
from videoferry.flows.migrate.runner import run_migration
from videoferry.tasks.service import run_limiter

#: Methods that change something in the service: check never sends one.
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def _videoferry(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`videoferry ARGS` as the console script runs it (flows.cli imported: every job's command is there)."""
    argv = [sys.executable, "-c", "from videoferry.flows.cli import main; main()", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def _by_hand(emu: Workspace, tmp_path: Path) -> VideoClient:
    """A client changing things behind the tool's back, inside the same rate budget as the tool's runs."""
    settings = settings_for(emu)
    return VideoClient.from_settings(settings, limiter=run_limiter(settings, str(tmp_path / "ledger.db")))


def _migrate(tmp_path: Path, emu: Workspace, rows: list[dict[str, Any]], name: str = "inv.csv") -> Path:
    inventory = write_inventory(tmp_path / name, rows)
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    return inventory


def _check(inventory: Path, emu: Workspace, ledger: Path, **changes: Any) -> Any:
    opts = CheckOptions(inventory=str(inventory), ledger=str(ledger), parent_id=emu.project_id, **changes)
    return run_check(opts, settings_for(emu))


def test_clean_migration_checks_same_everywhere_with_and_without_ledger(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 4)
    inventory = _migrate(tmp_path, emu, rows)
    mark = time.time()
    with_ledger = _check(inventory, emu, tmp_path / "ledger.db")
    assert with_ledger.exit_code == 0, [line.text() for line in with_ledger.lines]
    assert [line.mark.value for line in with_ledger.lines] == ["="] * 4
    assert all(line.bytes_by == "md5" for line in with_ledger.lines)
    calls = api_calls(emu_control, emu, since=mark)
    assert not [c for c in calls if c["method"] in WRITES]
    lists = [c for c in calls if c["path"] == "/v1/videos"]
    assert len(lists) == 1  # one call covers up to 100 videos
    gets = [c for c in calls if c["path"].startswith("/v1/videos/")]
    assert len(gets) == sum(1 for r in rows if "tags" in r)  # tags come only with a GET (spec 2.1)

    without = _check(inventory, emu, tmp_path / "no-such-ledger.db")
    assert without.exit_code == 0
    assert [line.mark.value for line in without.lines] == ["="] * 4
    assert all("found by title" in line.note for line in without.lines)
    assert not (tmp_path / "no-such-ledger.db").exists()


def test_changes_behind_the_back_are_found_with_symbol_and_field(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 4)
    rows[0]["description"] = "as planned"
    inventory = _migrate(tmp_path, emu, rows)
    by_title = {v["title"]: v["id"] for v in emu_control.videos(emu)}
    stray = clip_factory(1.0, name="stray.mp4")
    with _by_hand(emu, tmp_path) as client:
        client.videos.update(by_title[rows[0]["title"]], description="edited by hand", tags=["x"])
        client.videos.delete(by_title[rows[1]["title"]])
        client.uploads.single(parent_id=emu.project_id, title="Stray upload", source=open_source(str(stray)))
    combined = tmp_path / "combined.txt"
    report = tmp_path / "report"
    ledger = tmp_path / "ledger.db"
    mark = time.time()
    done = _videoferry(
        [
            "check", str(inventory), "--ledger", str(ledger), "--parent-id", emu.project_id,
            "--combined", str(combined), "--report", str(report), "--download-md5",
        ],
        cli_env(emu),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.splitlines()
    keys = [line for line in out if line[:2] in ("= ", "* ", "- ", "+ ", "! ")]
    assert len(keys) == 5
    changed = next(line for line in keys if f'"{rows[0]["title"]}"' in line)
    assert changed.startswith("* ") and "differs in description, tags" in changed
    assert next(line for line in keys if f'"{rows[1]["title"]}"' in line).startswith("- ")
    assert next(line for line in keys if '"Stray upload"' in line).startswith("+ ")
    assert sum(1 for line in keys if line.startswith("= ")) == 2
    summary = "4 items: 2 same (=), 1 differ (*), 1 missing (-), 0 not checked (!); 1 only in the service (+)"
    assert summary in out
    assert combined.read_text(encoding="utf-8").splitlines() == keys
    assert {p.name for p in report.iterdir()} >= {"check.csv", "check.json", "check.html", "check.parquet"}
    assert not [c for c in api_calls(emu_control, emu, since=mark) if c["method"] in WRITES]
    texts = [done.stdout, done.stderr, combined.read_text(), *(p.read_text() for p in report.glob("*.*sv"))]
    texts += [(report / "check.json").read_text(), (report / "check.html").read_text()]
    for text in texts:
        assert emu.token not in text
        assert "sig=" not in text  # asset links are signed: never shown


def test_lost_ledger_is_adopted_then_migrate_creates_only_the_missing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 5)
    _migrate(tmp_path, emu, rows[:3], name="first.csv")
    (tmp_path / "ledger.db").unlink()  # the disk is gone
    by_title = {v["title"]: v["id"] for v in emu_control.videos(emu)}
    with _by_hand(emu, tmp_path) as client:  # a copy: two videos now fit row 2; row 0 lost its tags
        client.videos.copy(by_title[rows[2]["title"]])
        client.videos.update(by_title[rows[0]["title"]], tags=["x"])
    inventory = write_inventory(tmp_path / "all.csv", rows)
    new_ledger = tmp_path / "rebuilt.db"
    mark = time.time()
    adopted = _check(inventory, emu, new_ledger, adopt=True, rewrite_differing=True)
    assert adopted.exit_code == 1
    assert not [c for c in api_calls(emu_control, emu, since=mark) if c["method"] in WRITES]
    # Row 2: the oldest of the two videos with its title is its own, the later one a copy (+).
    assert [line.mark.value for line in adopted.lines] == ["*", "=", "=", "-", "-", "+"]
    assert adopted.lines[0].fields == ("tags",)
    assert adopted.lines[5].video_id != by_title[rows[2]["title"]]
    items = adopted.lines[:5]
    assert [a.key for a in adopted.adoptions] == [line.key for line in items]
    assert [a.adopted for a in adopted.adoptions] == [True, True, True, False, False]
    assert adopted.adoptions[2].video_id == by_title[rows[2]["title"]]
    assert "the oldest of 2" in adopted.adoptions[2].detail
    assert adopted.adoptions[0].detail == "done; migrate writes the row's tags, chapters"
    assert adopted.adoptions[1].detail == "finished"
    assert adopted.summary["adopted"] == 3 and adopted.summary["left_to_migrate"] == 2

    mark = time.time()
    again = run_migration(options(inventory, emu, tmp_path, ledger=str(new_ledger)), settings_for(emu))
    assert again.exit_code == 0, again.reasons
    made = creates(emu_control, emu, since=mark)
    assert len(made) == 2  # rows 3 and 4: no third copy of row 2
    final = _check(inventory, emu, new_ledger)  # row 0's tags were set again by migrate's finish step
    items = [line for line in final.lines if line.key is not None]
    assert [line.mark.value for line in items] == ["="] * 5
    assert [line.mark.value for line in final.lines if line.key is None] == ["+"]  # the copy


def test_accounts_without_originals_compare_durations(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    variants = ["no-original", "ignore-parent-filter", "ignore-title-filter", "ids-base58"]
    emu_control.set_variants(emu, variants)
    other_project, _ = emu_control.create_project(emu)
    rows = clip_rows(clip_factory, 3, metadata=False)
    _migrate(tmp_path, emu, rows)
    elsewhere = open_source(str(clip_factory(1.0, name="o.mp4")))
    with _by_hand(emu, tmp_path) as client:  # another project: not this check's business
        client.uploads.single(parent_id=other_project, title="Elsewhere", source=elsewhere)
    rows[0]["duration"] = "1.0"
    rows[1]["duration"] = "0:09"
    with_durations = write_inventory(tmp_path / "durations.csv", rows)
    outcome = _check(with_durations, emu, tmp_path / "ledger.db")
    lines = {line.title: line for line in outcome.lines}
    assert len(outcome.lines) == 3
    assert lines[rows[0]["title"]].mark.value == "=" and lines[rows[0]["title"]].bytes_by == "duration"
    assert lines[rows[1]["title"]].mark.value == "*" and lines[rows[1]["title"]].fields == ("duration",)
    # No duration in the inventory: the source file's own (read from its container) is compared.
    assert lines[rows[2]["title"]].mark.value == "=" and lines[rows[2]["title"]].bytes_by == "duration"
    assert all("keeps no original" in line.note for line in outcome.lines)
    assert outcome.summary["no_original"] == 3
    assert outcome.exit_code == 1


def test_a_tidying_service_is_no_drift_and_a_cut_title_is_a_warning(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    """Titles and descriptions tidied, tags lower-cased and deduplicated, a title cut to the cap: the
    library is what the inventory meant (every line `=`, with and without the ledger), the cut title is said
    on its line and counted as a warning."""
    emu_control.set_variants(emu, ["tidy-text", "title-cap", "tags-tidy", "chapter-titles-trimmed"])
    long_title = "A lecture series on the history of video compression, recorded in the main hall " * 2
    rows: list[dict[str, Any]] = [
        {
            "source": str(clip_factory(0.5, name="a.mp4")),
            "title": "  Cafe\u0301  talk\t1 ",
            "tags": "News;news",
        },
        {"source": str(clip_factory(0.6, name="b.mp4")), "title": long_title, "description": " two  spaces "},
        {
            "source": str(clip_factory(0.7, name="c.mp4")),
            "title": "Chapters",
            "chapters": '[{"time": 0, "title": " Start "}, {"time": 0.25, "title": "Next\\t"}]',
        },
    ]
    inventory = _migrate(tmp_path, emu, rows)
    stored = {v["title"] for v in emu_control.videos(emu)}
    assert "Café talk 1" in stored and long_title.strip()[:128] in stored  # the service kept another form
    for ledger in (tmp_path / "ledger.db", tmp_path / "no-such-ledger.db"):
        checked = _check(inventory, emu, ledger)
        assert checked.exit_code == 0, [line.text() for line in checked.lines]
        assert [line.mark.value for line in checked.lines] == ["="] * 3
        cut = [line for line in checked.lines if "title cut by the service" in line.note]
        assert len(cut) == 1 and "128" in cut[0].note, [line.note for line in checked.lines]
