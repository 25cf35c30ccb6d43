"""MkDocs hooks (mkdocs.yml): a table cell's `a\\|b` code shows `a|b`, as GitHub shows the READMEs."""

from __future__ import annotations

import re
from typing import Any

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

#: A code span on a line.
_CODE = re.compile(r"`[^`\n]*`")


class _TablePipes(Preprocessor):
    """In table rows, `\\|` inside a code span becomes `|` (Python-Markdown keeps the backslash there; a pipe
    inside a code span does not split the cell, so the escape is only needed for GitHub)."""

    def run(self, lines: list[str]) -> list[str]:
        return [
            _CODE.sub(lambda m: m.group().replace("\\|", "|"), line)
            if line.lstrip().startswith("|")
            else line
            for line in lines
        ]


class TablePipes(Extension):
    """Registers _TablePipes after pymdownx.snippets (priority 32), so included READMEs are covered too."""

    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        md.preprocessors.register(_TablePipes(md), "table_pipes", 25)


def on_config(config: Any) -> Any:
    """Add the extension to the site's Markdown extensions."""
    config.markdown_extensions.append(TablePipes())
    return config
