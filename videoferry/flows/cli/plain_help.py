"""Plain `--help` text (no boxes): wrapped at the terminal's width between words, never a value cut short."""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

from typer._click import Context
from typer._click.formatting import HelpFormatter

#: The widest help text whatever the terminal (longer lines read badly), and the narrowest.
MAX_WIDTH = 100
MIN_WIDTH = 50
#: The first column (an option's names and value) is at most this wide; a longer one puts its help below it.
FIRST_COLUMN = 30


#: `[env var: NAME; default: VALUE]`: each label stays on the line of its value.
_LABEL = re.compile(r"(env var|default|required): ")
#: Stands for the space after a label while the text is wrapped (no help text holds it).
_GLUE = "\x1f"


def wrap(text: str, width: int) -> list[str]:
    """The lines of one paragraph at most `width` wide, broken only between words: a word longer than the
    line (an address, a variable's name) stands whole on its own line, a hyphen never breaks one, and a label
    of the [env var: ...; default: ...] note stays with its value."""
    wrapper = textwrap.TextWrapper(width=max(width, 1), break_long_words=False, break_on_hyphens=False)
    glued = _LABEL.sub(lambda m: m.group(1).replace(" ", _GLUE) + ":" + _GLUE, " ".join(text.split()))
    return [line.replace(_GLUE, " ") for line in wrapper.wrap(glued)] or [""]


class PlainFormatter(HelpFormatter):
    """click's plain layout (Usage, the text, then `--option VALUE  help` rows), wrapped as wrap() does at
    the terminal's width (COLUMNS, else the terminal's; between MIN_WIDTH and MAX_WIDTH)."""

    def __init__(self, indent_increment: int = 2, width: int | None = None, max_width: int | None = None):
        columns = shutil.get_terminal_size().columns
        super().__init__(indent_increment, width or max(min(columns, MAX_WIDTH) - 1, MIN_WIDTH), max_width)

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        paragraphs = [p for p in text.split("\n\n") if p.strip()]
        blocks = [
            "\n".join(indent + line for line in wrap(p, self.width - self.current_indent)) for p in paragraphs
        ]
        self.write("\n\n".join(blocks) + "\n")

    def write_dl(
        self, rows: Sequence[tuple[str, str]], col_max: int = FIRST_COLUMN, col_spacing: int = 2
    ) -> None:
        rows = list(rows)
        if not rows:
            return
        first_width = min(max(len(first) for first, _ in rows), col_max)
        help_at = self.current_indent + first_width + col_spacing
        for first, second in rows:
            self.write(" " * self.current_indent + first)
            lines = wrap(second, self.width - help_at) if second.strip() else []
            if not lines:
                self.write("\n")
                continue
            if len(first) <= first_width:
                self.write(" " * (help_at - self.current_indent - len(first)))
            else:  # a long option: its help starts on the next line
                self.write("\n" + " " * help_at)
            self.write(lines[0] + "\n")
            for line in lines[1:]:
                self.write(" " * help_at + line + "\n")


class PlainContext(Context):
    """A command's context whose --help is PlainFormatter's."""

    formatter_class = PlainFormatter


def shown_names(opts: Sequence[str]) -> list[str]:
    """The names --help shows of an option's: its short names and its first long name; a later long name is
    an old one, still accepted but no longer shown (docs/reference/command-line.md)."""
    first_long = next((o for o in opts if o.startswith("--")), None)
    return [o for o in opts if not o.startswith("--") or o == first_long]


def option_rows(command: Any, ctx: Context) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The help rows of a command's arguments and options, old names left out (shown_names)."""
    arguments: list[tuple[str, str]] = []
    options: list[tuple[str, str]] = []
    for param in command.get_params(ctx):
        if param.param_type_name == "option":
            opts = param.opts
            param.opts = shown_names(opts)
            try:
                record = param.get_help_record(ctx)
            finally:
                param.opts = opts
            if record is not None:
                options.append(record)
        elif (record := param.get_help_record(ctx)) is not None:
            arguments.append(record)
    return arguments, options


def format_options(command: Any, ctx: Context, formatter: HelpFormatter) -> None:
    """A command's Arguments and Options sections."""
    arguments, options = option_rows(command, ctx)
    for title, rows in (("Arguments", arguments), ("Options", options)):
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


def format_commands(group: Any, ctx: Context, formatter: HelpFormatter) -> None:
    """A group's Commands section: each command's first sentence whole, wrapped (never cut with `...`)."""
    rows = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None and not command.hidden:
            rows.append((name, command.get_short_help_str(limit=10_000)))
    if rows:
        with formatter.section("Commands"):
            formatter.write_dl(rows)
