"""rewrite-embeds on files: the HTML, Markdown and text files under the given paths, each read in its own
encoding (UTF-8 with or without BOM, UTF-16 with BOM, else Latin-1) and line endings, written back atomically
(a temporary file beside it, its mode kept, then os.replace) only when something changed."""

from __future__ import annotations

import codecs
import difflib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from videoferry.core.redact import scrub_urls
from videoferry.tasks.links.rewrite import EmbedMap, Unmapped, rewrite_text

#: The files a folder is walked for (a file named on the command line is read whatever its name).
TEXT_SUFFIXES = frozenset({".html", ".htm", ".xhtml", ".md", ".markdown", ".mdx", ".txt", ".text"})
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


@dataclass
class FileResult:
    """What rewrite-embeds did to one file: URLs replaced, the ones left, its diff, or the error that kept it
    as it was."""

    path: Path
    replaced: int = 0
    unmapped: list[Unmapped] = field(default_factory=list)
    diff: str = ""
    error: str = ""


def text_files(paths: Iterable[str]) -> Iterator[Path]:
    """The files to rewrite: each file given, and each HTML, Markdown or text file under a folder given
    (sorted; hidden folders such as .git skipped). A path that does not exist is yielded as it is (its
    read fails with a message)."""
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            yield path
            continue
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if Path(name).suffix.lower() in TEXT_SUFFIXES:
                    yield Path(folder) / name


def decode(raw: bytes) -> tuple[str, str, bytes]:
    """(text, encoding, BOM) of a file's bytes; line endings are left as they are."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            return raw[len(bom) :].decode(encoding), encoding, bom
    try:
        return raw.decode("utf-8"), "utf-8", b""
    except UnicodeDecodeError:
        return raw.decode("latin-1"), "latin-1", b""


def write_atomically(path: Path, data: bytes) -> None:
    """Replace path's content with data in one step: a temporary file in its folder (path's mode), flushed
    to disk, then os.replace; a failure leaves the file as it was."""
    mode = stat.S_IMODE(path.stat().st_mode)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def rewrite_file(path: Path, links: EmbedMap, *, dry_run: bool) -> FileResult:
    """Rewrite one file (dry_run: only its diff); errors are the result's, never raised."""
    result = FileResult(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        result.error = f"cannot read: {exc.strerror or exc}"
        return result
    text, encoding, bom = decode(raw)
    done = rewrite_text(text, links)
    result.replaced, result.unmapped = done.replaced, done.unmapped
    if done.text == text:
        return result
    shown = path.as_posix().lstrip("/")  # `a/srv/site/index.html`, as `patch -p1` from / reads it
    result.diff = scrub_urls(  # the diff is for reading: a URL's user part, query and fragment never show
        "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                done.text.splitlines(keepends=True),
                fromfile=f"a/{shown}",
                tofile=f"b/{shown}",
            )
        )
    )
    if dry_run:
        return result
    try:
        write_atomically(path, bom + done.text.encode(encoding))
    except (OSError, UnicodeEncodeError) as exc:
        result.error = f"cannot write: {getattr(exc, 'strerror', None) or exc}"
        result.replaced = 0
    return result
