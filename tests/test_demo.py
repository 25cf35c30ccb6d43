"""`make demo`, the README's first command: what its Makefile recipe runs, end to end (fewer clips)."""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

from tests.flows.helpers import cli_env, run_cli

ROOT = Path(__file__).resolve().parent.parent


def _demo_args() -> list[str]:
    """The arguments `make demo` gives videoferry (its recipe: `$(BIN)/videoferry demo ...`)."""
    recipe = re.search(r"^demo:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe is not None, "the Makefile has no demo target"
    words = shlex.split(recipe.group(1))
    assert words[0].endswith("/videoferry"), words
    return words[1:]


def test_make_demo_migrates_its_clips_and_writes_its_report(tmp_path: Path) -> None:
    args = [*_demo_args(), "--items", "3", "--workdir", str(tmp_path / "demo")]
    assert args[0] == "demo", args
    done = run_cli(args, cli_env(), cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "items: 3" in said and "complete: 3" in said, said
    report = tmp_path / "demo" / "report" / "report.html"
    assert f"report: {report}" in said and report.stat().st_size > 0, said
    with sqlite3.connect(tmp_path / "demo" / "ledger.db") as db:
        states = [row[0] for row in db.execute("SELECT state FROM items")]
    assert states == ["finished"] * 3, states
