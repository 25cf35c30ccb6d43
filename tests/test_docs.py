"""The documentation stays true: the command-line reference is what the declarations generate, and every
benchmark figure README.md and docs/ cite is the one bench/RESULTS.md holds."""

from __future__ import annotations

import difflib
import re
from decimal import Decimal
from pathlib import Path

from videoferry.flows.cli import reference

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "RESULTS.md"

#: A figure line of a RESULTS.md section (`name: value[ unit] (how)`) and a row of its targets table.
_FIGURE_LINE = re.compile(r"^([a-z][a-z0-9_]*): (-?\d+(?:\.\d+)?)\b", re.M)
_TARGET_ROW = re.compile(r"^\|[^|\n]*\| `([a-z][a-z0-9_]*)` \|[^|\n]*\| (-?\d+(?:\.\d+)?) \|", re.M)
#: The citing convention (docs/benchmarks.md): the figure's name in backticks, a space, its value.
_CITED = re.compile(r"`([a-z][a-z0-9_]*)` (-?\d+(?:\.\d+)?)\b")
#: A docs page that includes a file whole (pymdownx.snippets), possibly one section of it.
_INCLUDE = re.compile(r'^--8<-- "([^":]+)(?::[^"]*)?"$', re.M)


def results_figures(text: str) -> dict[str, set[Decimal]]:
    """Every figure RESULTS.md states, in its sections and its targets table, with the values it gives."""
    figures: dict[str, set[Decimal]] = {}
    for pattern in (_FIGURE_LINE, _TARGET_ROW):
        for name, value in pattern.findall(text):
            figures.setdefault(name, set()).add(Decimal(value))
    return figures


def documentation_files() -> list[Path]:
    """README.md, ARCHITECTURE.md, every page under docs/ and every file a page includes (not RESULTS.md)."""
    pages = sorted((REPO / "docs").rglob("*.md"))
    files = {REPO / "README.md", REPO / "ARCHITECTURE.md", *pages}
    for page in pages:
        files.update(REPO / included for included in _INCLUDE.findall(page.read_text(encoding="utf-8")))
    files.discard(RESULTS)
    return sorted(files)


def cited_figures(path: Path, figures: dict[str, set[Decimal]]) -> list[tuple[str, str, str]]:
    """(file:line, name, value) of each figure the file cites: a RESULTS.md figure's name followed by a
    value, and any backticked name followed by a value in a paragraph that cites RESULTS.md (an unknown
    name there is a figure that was renamed or never measured)."""
    text = path.read_text(encoding="utf-8")
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    found = []
    for paragraph in re.finditer(r"(?:[^\n]+\n?)+", text):
        cites_results = "RESULTS.md" in paragraph.group()
        for match in _CITED.finditer(paragraph.group()):
            name, value = match.group(1), match.group(2)
            if name in figures or cites_results:
                line = text.count("\n", 0, paragraph.start() + match.start()) + 1
                found.append((f"{shown}:{line}", name, value))
    return found


def test_cli_reference_page_is_what_the_declarations_generate() -> None:
    committed = reference.PAGE.read_text(encoding="utf-8")
    fresh = reference.render()
    diff = difflib.unified_diff(
        committed.splitlines(), fresh.splitlines(), "committed", "generated", lineterm=""
    )
    assert committed == fresh, (
        "docs/reference/cli.md is stale: run `python -m videoferry.flows.cli.reference` and commit the page\n"
        + "\n".join(list(diff)[:20])
    )


def test_cli_reference_page_names_every_command_and_option() -> None:
    page = reference.PAGE.read_text(encoding="utf-8")
    for title in ("videoferry migrate", "videoferry apply", "videoferry setup drift", "videoferry backup"):
        assert f"## `{title}`" in page, title
    for option in (
        "--parent-id ID",
        "--ledger PATH|s3://BUCKET/KEY",
        "--event-ids ID,ID",
        "--prefect / --no-prefect",
    ):
        assert option in page, option


#: RESULTS.md as `make bench-alone` writes it: a section's figure lines and a row of the targets table.
SAMPLE_RESULTS = """\
| 300 by webhook | `e2e_300_webhooks_vs_floor` | <= 1.1 | 1.046 | one run | yes (one run) |
| restore by URL vs by tus | `restore_url_vs_tus` | | 0.190 | min 0.180 / max 0.200 of 3 rounds | |

```
api_calls_per_video_webhook: 1.030 [one run] (least 1.00 (100 creates); ...)
calibration_cpu_loop_seconds: 0.132 s [min 0.116 / max 0.144 of 6 rounds] (CPU seconds of a fixed loop)
```
"""


def test_results_figures_are_read() -> None:
    figures = results_figures(SAMPLE_RESULTS)
    assert figures["restore_url_vs_tus"] == {Decimal("0.19")}  # 0.190 is the same figure as 0.19
    assert figures["api_calls_per_video_webhook"] == {Decimal("1.03")}
    assert figures["e2e_300_webhooks_vs_floor"] == {Decimal("1.046")}
    assert figures["calibration_cpu_loop_seconds"] == {Decimal("0.132")}
    assert "calibration_cpu_loop_seconds" in results_figures(RESULTS.read_text(encoding="utf-8"))


def test_every_cited_figure_is_the_one_in_results() -> None:
    figures = results_figures(RESULTS.read_text(encoding="utf-8"))
    cited = [c for path in documentation_files() for c in cited_figures(path, figures)]
    wrong = [
        f"{where}: `{name}` {value}, but bench/RESULTS.md says {sorted(map(str, figures[name]))}"
        if name in figures
        else f"{where}: `{name}` {value} is no figure of bench/RESULTS.md"
        for where, name, value in cited
        if Decimal(value) not in figures.get(name, set())
    ]
    assert not wrong, "\n".join(wrong)
    names = {name for _, name, _ in cited}
    # The figures the documentation has contradicted before (issue 45): each is cited, and so checked.
    for name in (
        "restore_url_vs_tus",
        "remote_ledger_overhead_seconds",
        "e2e_300_webhooks_vs_floor",
        "api_calls_per_video_tus",
    ):
        assert name in names, name


def test_a_wrong_or_unknown_figure_is_found(tmp_path: Path) -> None:
    figures = {"restore_url_vs_tus": {Decimal("0.19")}}
    page = tmp_path / "page.md"
    page.write_text(
        "Restored faster (`bench/RESULTS.md`, `restore_url_vs_tus` 1.11, `restore_ratio` 2).\n\n"
        "Elsewhere `restore_url_vs_tus` 0.19 and `--transfers` 4.\n",
        encoding="utf-8",
    )
    found = [(name, value) for _, name, value in cited_figures(page.resolve(), figures)]
    assert found == [("restore_url_vs_tus", "1.11"), ("restore_ratio", "2"), ("restore_url_vs_tus", "0.19")]


#: A file path as the docs write one: folders, then a name with one of these extensions.
DOC_PATH = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|yaml|yml|toml))\b")
#: Files a command writes, named in the docs before they exist.
WRITTEN_BY_COMMANDS = {"bench/RESULTS-scale.md", "drafts/todo.md"}


def _missing_paths(text: str, where: Path) -> list[str]:
    """The paths named in text that exist neither from the repository's top, nor under videoferry/ (the docs'
    convention: tasks/gap.py is videoferry/tasks/gap.py), nor beside the page."""
    missing = []
    for match in DOC_PATH.finditer(text):
        path = match.group(1)
        if path.startswith(("../shared/", "shared/")) or path in WRITTEN_BY_COMMANDS:  # the spec beside us
            continue
        if not any(p.exists() for p in (REPO / path, REPO / "videoferry" / path, where.parent / path)):
            missing.append(path)
    return missing


def test_every_file_the_docs_name_exists() -> None:
    """A module renamed or moved leaves no page naming the old path (README, ARCHITECTURE.md, docs/, the
    package READMEs)."""
    pages = [p for p in REPO.rglob("*.md") if not {".venv", "site", ".pytest_cache"} & set(p.parts)]
    stale = {
        f"{page.relative_to(REPO)}: {path}"
        for page in pages
        for path in _missing_paths(page.read_text(), page)
    }
    assert not stale, "paths the docs name that do not exist:\n  " + "\n  ".join(sorted(stale))


def test_a_stale_path_is_found() -> None:
    """The check sees a path that is gone, and takes one under videoferry/ or the top as it is."""
    page = REPO / "README.md"
    assert _missing_paths("see `tasks/no_such_module.py` and tasks/gap.py and bench/README.md", page) == [
        "tasks/no_such_module.py"
    ]
