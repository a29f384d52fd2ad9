"""Read a file of an image's root as the container would see it, never the host's.

A path is resolved component by component inside the root: `..` stops at the root, and a
symbolic link is followed as if the root were `/` (what runc's and containerd's securejoin
do), so an image whose `/etc/passwd` links to `/etc/shadow` or `../../../etc/passwd` reads its
own file, not the host's. The file is opened without following a final link and read up to a
bound.

Hand-written: Python has no `openat2(RESOLVE_IN_ROOT)`, and no maintained library does this.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Final

__all__ = ["MAX_FILE", "read_in_root", "resolve_in_root"]

MAX_LINKS: Final = 40  # as the kernel's MAXSYMLINKS
MAX_FILE: Final = 4 * 1024 * 1024  # /etc/passwd or /etc/group past this is not read


def resolve_in_root(root: Path, path: str) -> Path:
    """`path` (absolute in the container) as a host path under `root`, links followed inside."""
    parts = list(PurePosixPath("/", path).parts[1:])
    resolved: list[str] = []
    links = 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = root.joinpath(*resolved, part)
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            resolved.append(part)
            continue
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise OSError(f"too many levels of symbolic links: {path}")
            target = os.readlink(candidate)
            if target.startswith("/"):
                resolved = []
            parts = [*PurePosixPath(target).parts, *parts]
            if target.startswith("/"):
                parts = parts[1:]
            continue
        resolved.append(part)
    return root.joinpath(*resolved)


def read_in_root(root: Path, path: str, limit: int = MAX_FILE) -> str | None:
    """The text of `path` in the image's root; None when it does not exist or is not a file."""
    try:
        host = resolve_in_root(root, path)
        fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")
