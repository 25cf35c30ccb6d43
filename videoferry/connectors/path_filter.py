"""rclone's --include / --exclude filter rules over listed object paths, and the video-files-only default."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["MEDIA_EXTENSIONS", "FilterError", "PathFilter", "Verdict", "glob_regex", "is_media"]

#: What the listing takes when no --include is given: video files by extension (any case).
MEDIA_EXTENSIONS: frozenset[str] = frozenset(
    {
        "3g2", "3gp", "asf", "avi", "divx", "dv", "f4v", "flv", "m2t", "m2ts", "m2v", "m4v", "mkv", "mod",
        "mov", "mp4", "mpe", "mpeg", "mpg", "mts", "mxf", "ogv", "qt", "rm", "rmvb", "tod", "ts", "vob",
        "webm", "wmv",
    }
)  # fmt: skip

#: Why a path is or is not taken: "included" / "excluded" by a rule, "default" (no rule matched and rclone's
#: fall-through takes it: a video file), "not media" (no rule matched, no --include, not a video file).
Verdict = Literal["included", "excluded", "default", "not media"]

#: rclone's (re2's) Perl classes are ASCII: their members, for use inside a character class.
_PERL_MEMBERS = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}


class FilterError(ValueError):
    """A filter pattern that cannot be read; the message names the pattern and what is wrong."""


def is_media(path: str) -> bool:
    """Whether the last segment of `path` has a video file extension (MEDIA_EXTENSIONS, any case)."""
    ext = posixpath.splitext(posixpath.basename(path))[1]
    return ext[1:].lower() in MEDIA_EXTENSIONS


def _bracket(glob: str, start: int) -> tuple[str, int]:
    """The regex class of the `[...]` at glob[start] and the index after it."""
    i, out = start + 1, ["["]
    if i < len(glob) and glob[i] in "!^":
        out.append("^")
        i += 1
    first = i
    while i < len(glob) and glob[i] != "]":
        ch = glob[i]
        if ch == "\\" and i + 1 < len(glob):
            nxt = glob[i + 1]
            if nxt.isupper() and nxt.lower() in _PERL_MEMBERS:
                raise FilterError(f"{glob!r}: a negated class \\{nxt} inside [...] is not supported")
            out.append(_PERL_MEMBERS.get(nxt) or re.escape(nxt))
            i += 2
            continue
        if ch == "[" and glob.startswith("[:", i):
            raise FilterError(f"{glob!r}: named classes like [[:alpha:]] are not supported; write a range")
        out.append("-" if ch == "-" and first < i < len(glob) - 1 and glob[i + 1] != "]" else re.escape(ch))
        i += 1
    if i >= len(glob):
        raise FilterError(f"{glob!r}: '[' without a closing ']'")
    if i == first:
        raise FilterError(f"{glob!r}: an empty character class []")
    return "".join(out) + "]", i + 1


def _escaped(ch: str) -> str:
    """The regex of ``\\ch`` outside a class: a Perl class (ASCII, as in re2), else the character itself."""
    members = _PERL_MEMBERS.get(ch.lower())
    if members is None:
        return re.escape(ch)
    return f"[{members}]" if ch.islower() else f"[^{members}]"


def glob_regex(glob: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """The regular expression of one rclone filter pattern, matched with ``search`` against a relative path.

    ``*`` any run of characters but ``/``; ``**`` any run including ``/``; ``?`` one character but ``/``;
    ``[a-z]``, ``[!a-z]`` (or ``[^a-z]``) a character class; ``{a,b}`` alternatives (nested allowed);
    ``\\c`` the character c (``\\d``, ``\\w``, ``\\s`` and their capitals: Perl classes, as in rclone). A
    leading ``/`` anchors at the listing's root, else the pattern matches whole trailing path segments.
    ``{{regexp}}`` is not supported (rclone's re2 and Python's re differ).
    """
    if "{{" in glob:
        raise FilterError(f"{glob!r}: regular expressions {{{{...}}}} are not supported; use a glob")
    body, i, depth, stars = glob[1:] if glob.startswith("/") else glob, 0, 0, 0
    out = ["^" if glob.startswith("/") else "(?:^|/)"]
    while i < len(body):
        ch = body[i]
        if ch == "*":
            stars = len(body[i:]) - len(body[i:].lstrip("*"))
            if stars > 2:
                raise FilterError(f"{glob!r}: too many stars (* is one segment, ** any depth)")
            out.append("[^/]*" if stars == 1 else ".*")
            i += stars
            continue
        if ch == "\\":
            if i + 1 >= len(body):
                raise FilterError(f"{glob!r}: a trailing \\ escapes nothing")
            out.append(_escaped(body[i + 1]))
            i += 2
            continue
        if ch == "[":
            cls, i = _bracket(body, i)
            out.append(cls)
            continue
        if ch == "]":
            raise FilterError(f"{glob!r}: ']' without an opening '['")
        if ch == "{":
            depth += 1
            out.append("(?:")
        elif ch == "}":
            if depth == 0:
                raise FilterError(f"{glob!r}: '}}' without an opening '{{'")
            depth -= 1
            out.append(")")
        elif ch == "," and depth:
            out.append("|")
        elif ch == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(ch))
        i += 1
    if depth:
        raise FilterError(f"{glob!r}: '{{' without a closing '}}'")
    try:
        return re.compile("".join(out) + "$", re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise FilterError(f"{glob!r}: {exc}") from None


@dataclass(frozen=True)
class _Rule:
    include: bool
    pattern: str
    regex: re.Pattern[str] | None  # None: a directory rule, which matches no object


@dataclass(frozen=True)
class PathFilter:
    """rclone's filter rules for objects listed under a prefix (paths relative to it, no leading /).

    Order as rclone's: every --include in the order given, then every --exclude; the first rule that matches
    decides. With any --include, rclone's implied ``- **`` closes the list (nothing else is taken). Without
    one, rclone takes what no rule matched; here only video files (MEDIA_EXTENSIONS, any case) are, and
    takes() refuses what a rule included that is not one. A pattern ending in ``/`` is a directory rule:
    ``--exclude dir/`` means ``dir/**`` (as in rclone), ``--include dir/`` alone matches no object.
    Case-sensitive unless `ignore_case` (rclone's --ignore-case). Raises FilterError for a pattern it cannot
    read.
    """

    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    ignore_case: bool = False
    _rules: tuple[_Rule, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rules: list[_Rule] = []
        for include, patterns in ((True, self.include), (False, self.exclude)):
            for pattern in patterns:
                glob = pattern + "**" if pattern.endswith("/") and not include else pattern
                directory_only = glob.endswith("/")
                regex = None if directory_only else glob_regex(glob, ignore_case=self.ignore_case)
                rules.append(_Rule(include, pattern, regex))
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        object.__setattr__(self, "_rules", tuple(rules))

    @property
    def given(self) -> bool:
        """Whether any rule was given (else only the video-files default applies)."""
        return bool(self._rules)

    def verdict(self, path: str) -> Verdict:
        """Why `path` (relative to the listed prefix) is taken or skipped."""
        for rule in self._rules:
            if rule.regex is not None and rule.regex.search(path):
                return "included" if rule.include else "excluded"
        if self.include:
            return "excluded"  # rclone's implied "- **"
        return "default" if is_media(path) else "not media"

    def takes(self, path: str) -> bool:
        """Whether the object at `path` (relative to the listed prefix) becomes an inventory row: a video file
        the rules take (one they include that is not a video file is refused)."""
        verdict = self.verdict(path)
        return verdict == "default" or (verdict == "included" and is_media(path))
