"""The command line's --help: answered without importing Prefect; plain text wrapped at 80 columns with every
option's names, value, default and environment variable whole."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from videoferry.flows.cli import app
from videoferry.flows.cli.plain_help import PlainContext, wrap

_PROBE = (
    "import sys\n"
    "from typer.testing import CliRunner\n"
    "from videoferry.flows.cli import app\n"
    "r = CliRunner().invoke(app, ['--help'])\n"
    "print(r.exit_code, 'prefect' in sys.modules)\n"
)


def test_help_does_not_import_prefect() -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["0", "False"]


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command and group of the app, the app itself first, with its path of names."""
    yield path, group
    for name, command in getattr(group, "commands", {}).items():
        yield from _commands(command, (*path, name))


COMMANDS = dict(_commands(get_command(app)))


def _help(path: tuple[str, ...], columns: int) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "videoferry")
def test_help_at_80_columns_is_plain_text_with_every_value_whole(path: tuple[str, ...]) -> None:
    text = _help(path, 80)
    lines = text.splitlines()
    flat = " ".join(text.split())
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    for mark in ("…", "│", "╭", "─"):  # nothing cut short, no boxes (every text whole: below)
        assert mark not in text, mark
    command = COMMANDS[path]
    ctx = PlainContext(command, info_name=path[-1] if path else "videoferry")
    if command.help:  # the command's text, every word whole (no word broken at a hyphen or the margin)
        assert " ".join(command.help.split("\f")[0].split()) in flat
    for param in command.get_params(ctx):
        if param.param_type_name != "option" or param.hidden:
            continue
        first = param.opts[0] if param.opts[0].startswith("--") else param.opts[-1]
        shown = f"{first} {param.metavar}" if param.metavar else first
        assert any(shown in line for line in lines), shown  # the name and its value on one line, whole
        assert " ".join((param.help or "").split()) in flat, param.name  # the help, word for word
        if param.envvar:
            assert any(f"env var: {param.envvar}" in line for line in lines), param.envvar
        default = param.default
        if default not in (None, False, 0, "", []) and not param.is_flag and not param.multiple:
            assert any(f"default: {default}" in line for line in lines), default


def test_sentences_wrap_between_words_at_the_terminal_width() -> None:
    wide = _help(("migrate",), 120)
    assert max(len(line) for line in wide.splitlines()) > 80  # a wider terminal gets longer lines
    assert all(len(line) <= 120 for line in wide.splitlines())
    # A value longer than the line stands whole on its own line; a hyphen never breaks a word.
    assert wrap("see videoferry-ledger.db and s3://a-long-bucket/with/a-long-key/", 20) == [
        "see",
        "videoferry-ledger.db",
        "and",
        "s3://a-long-bucket/with/a-long-key/",
    ]
    # A label of the [env var: ...; default: ...] note stays on the line of its value.
    assert wrap("The ledger. [env var: VIDEOFERRY_LEDGER; default: x.db]", 30) == [
        "The ledger.",
        "[env var: VIDEOFERRY_LEDGER;",
        "default: x.db]",
    ]
