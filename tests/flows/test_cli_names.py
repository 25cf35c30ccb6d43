"""One name for one thing on the command line: the service's ids as --<field>-id in every command, lists
comma-separated (and repeatable), one value name per option; the old names still work, unseen in --help."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from videoferry.connectors.config import ConfigError
from videoferry.flows.archive.options import ArchiveOptions
from videoferry.flows.backup.options import BackupOptions
from videoferry.flows.cli import app
from videoferry.flows.cli.app import options_from_cli
from videoferry.state.ledger import Ledger

PROJECT = "6f1c2a9e-0000-4000-8000-000000000001"
FOLDER = "6f1c2a9e-0000-4000-8000-000000000002"
OTHER = "6f1c2a9e-0000-4000-8000-000000000003"


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, command in getattr(group, "commands", {}).items():
        yield (*path, name), command
        yield from _commands(command, (*path, name))


COMMANDS = dict(_commands(get_command(app)))


def _parse(declaration: type, path: tuple[str, ...], args: list[str]) -> Any:
    """The options a command line gives (parsed as `videoferry` parses it; nothing runs)."""
    with COMMANDS[path].make_context(path[-1], args) as ctx:
        return options_from_cli(declaration, ctx.params)[0]


def test_backup_names_the_project_and_folder_by_their_ids_as_the_service_does() -> None:
    new = _parse(BackupOptions, ("backup",), ["--project-id", PROJECT, "--folder-id", FOLDER, "--to", "d"])
    assert (new.project, new.folder) == (PROJECT, FOLDER)
    # The contract's names (DESIGN.md) still work: the same options.
    assert _parse(BackupOptions, ("backup",), ["--project", PROJECT, "--folder", FOLDER, "--to", "d"]) == new
    with pytest.raises(ConfigError, match="--folder-id"):
        _parse(BackupOptions, ("backup",), ["--project-id", PROJECT, "--folder-id", "nope", "--to", "d"])


def test_archive_moves_recordings_to_a_project_and_folder_named_as_everywhere() -> None:
    args = [
        "--to",
        "d",
        "--project-id",
        PROJECT,
        "--move-to-project-id",
        OTHER,
        "--move-to-folder-id",
        FOLDER,
    ]
    new = _parse(ArchiveOptions, ("archive",), args)
    assert new.selection().project_id == PROJECT
    assert new.move_target() == (OTHER, FOLDER)
    assert _parse(
        ArchiveOptions, ("archive",), ["--to", "d", "--project-id", PROJECT, "--move-to-project-id", OTHER]
    ).move_target() == (OTHER, None)
    # The old single value PROJECT/FOLDER and the old --project still work.
    old = _parse(
        ArchiveOptions, ("archive",), ["--to", "d", "--project", PROJECT, "--move-to", f"{OTHER}/{FOLDER}"]
    )
    assert (old.selection().project_id, old.move_target()) == (PROJECT, (OTHER, FOLDER))
    with pytest.raises(ConfigError, match="--move-to-folder-id needs --move-to-project-id"):
        _parse(
            ArchiveOptions,
            ("archive",),
            ["--to", "d", "--project-id", PROJECT, "--move-to-folder-id", FOLDER],
        )


def test_list_options_take_commas_and_repeats_alike() -> None:
    args = ["--to", "d", "--event-ids", "e1,e2", "--event-ids", "e3", "--tags", "a", "--tags", "b, c"]
    opts = _parse(ArchiveOptions, ("archive",), args)
    assert (opts.events, opts.tags) == (["e1", "e2", "e3"], ["a", "b", "c"])
    assert _parse(ArchiveOptions, ("archive",), ["--to", "d", "--events", "e1,e2"]).events == ["e1", "e2"]


def test_report_formats_comma_separated(tmp_path: Path) -> None:
    ledger = tmp_path / "l.db"
    Ledger.open(ledger).close()
    out = tmp_path / "r"
    result = CliRunner().invoke(
        app, ["report", "--ledger", str(ledger), "-f", "csv,html", "--report", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["items.csv", "report.html", "summary.csv"]


def test_emulator_variants_comma_separated() -> None:
    result = CliRunner().invoke(app, ["emulator", "--port", "0", "--variant", "list-lag,no-such-variant"])
    assert result.exit_code == 2 and "unknown variant 'no-such-variant'" in result.output


def test_one_name_and_one_value_name_per_option_across_commands() -> None:
    seen: dict[str, set[str]] = {}
    for path, command in COMMANDS.items():
        ctx = command.make_context(path[-1], [], resilient_parsing=True)
        text = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"}).output
        for param in command.get_params(ctx):
            if param.param_type_name != "option" or param.hidden or param.is_flag or param.count:
                continue
            name, *old = [o for o in param.opts if o.startswith("--")]
            # one value name: `--format FORMAT` (links) and `--format FORMAT,FORMAT` (report: a list) agree
            seen.setdefault(name, set()).add(param.metavar.split(",")[0])
            for alias in old:  # an old name works but --help shows only the new one
                assert f"{alias} " not in text and f"{alias}," not in text, (path, alias)
            if name.endswith("-id"):  # a service id: the spec's field name, one value name
                assert param.metavar == "ID", (path, name)
            if param.multiple and param.metavar != "GLOB":  # a list: comma-separated (globs have commas)
                assert "," in param.metavar and "comma-separated or repeated" in param.help, (path, name)
    assert {name: metavars for name, metavars in seen.items() if len(metavars) > 1} == {}
    assert seen["--since"] == {"WHEN"}
    assert {n for n in seen if n in ("--project", "--folder", "--events", "--move-to")} == set()
