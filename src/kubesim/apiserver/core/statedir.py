"""`--data-dir` as private state: what is written there only its owner reads.

The snapshot and journal hold every Secret, and `pki/` the cluster's CA key and admin token,
so files are written 0600 and directories 0700. State that already exists is used only when
this user owns it and nobody else may write to it: a directory another user prepared (or
one anyone can write to) could hand the simulator a CA or objects of their choosing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["UnsafeStateError", "check_existing", "private_dir", "write_private"]


class UnsafeStateError(ValueError):
    """Existing state under `--data-dir` that this process must not trust."""


def check_existing(path: Path) -> None:
    """Refuse `path` (when it exists) unless this user owns it, it is not a symbolic link,
    and neither group nor others may write to it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeStateError(f"refusing {path}: it is a symbolic link")
    if st.st_uid != os.geteuid():
        raise UnsafeStateError(
            f"refusing {path}: owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
        )
    if st.st_mode & 0o022:
        raise UnsafeStateError(
            f"refusing {path}: group or others may write to it "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); make it 0700 (0600 for a file)"
        )


def private_dir(path: Path) -> Path:
    """`path` made (0700) or checked, then kept 0700: only this user reads the state."""
    check_existing(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    check_existing(path)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` as a 0600 file of this user (never through a symbolic link)."""
    check_existing(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
