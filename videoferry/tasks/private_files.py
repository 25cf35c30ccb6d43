"""Files a job writes that hold personal data or secrets: mode 0600, in folders of mode 0700.

Archived chat (user names, messages) and QoS (client IPs), recordings, setup's outputs (stream keys, codes)
and report files (titles, sources, messages) are written here. A folder of a job's own layout (an event's or
a stream's folder, a report or outputs folder) is created 0700 and, when it exists already, tightened to
0700, never trusted as found. The folder a person names (`--to DIR`, `--report DIR`, `--outputs DIR`) is
created 0700 when missing and left as it is when it exists (it may be a home or a shared folder): nothing
below it is readable by anyone else either way. Whatever the umask says: modes are set, not masked.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(root: Path, *parts: str) -> Path:
    """root/parts...: root created 0700 when missing; every folder below it created 0700, or tightened to 0700
    when it exists. Raises PermissionError naming a folder that cannot be tightened (not ours)."""
    if not root.exists():
        root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        root.chmod(DIR_MODE)
    folder = root
    for part in parts:
        folder = folder / part
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        tighten(folder)
    return folder


def tighten(folder: Path) -> None:
    """Make an existing folder 0700 (group and others lose every bit); PermissionError names it when the
    folder is not ours to change."""
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode != DIR_MODE:
        try:
            folder.chmod(DIR_MODE)
        except PermissionError:
            why = f"cannot make {folder} private (mode {mode:o}, not ours to change)"
            raise PermissionError(why) from None


def write_private(path: Path, data: bytes) -> None:
    """Write data to path (replaced whole, through `<name>.part`), mode 0600; its folder must exist."""
    part = path.with_name(path.name + ".part")
    with open_private(part) as handle:
        handle.write(data)
    os.replace(part, path)


def open_private(path: Path) -> IO[bytes]:
    """path opened for writing (created or truncated), mode 0600 whatever the umask and whatever it was."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "wb")
