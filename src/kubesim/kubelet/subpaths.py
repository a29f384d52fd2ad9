"""`subPath` volume mounts, made safe as the kubelet makes them (its `subpath` package, Linux).

A container's files can hold symlinks, and a second container's `subPath` could name one that
leads out of the volume (`ln -s ../../../.. esc`, or an absolute target). So, as the kubelet:
a missing subPath is made one directory at a time without following links; the path is then
resolved with every symlink followed and must stay inside the volume; it is opened again one
component at a time with O_NOFOLLOW (a link swapped in meanwhile fails the open), and the open
handle is bind-mounted onto a directory of the container's own, which becomes the mount's
source. A failure is the kubelet's message for the container's CreateContainerConfigError;
the details go to the log only (they would tell a user about the host's files).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from pathlib import Path
from typing import Final

import structlog

from kubesim.kubelet.envvars import ConfigError

__all__ = ["SubPathError", "bind_sub_path", "mount_overlay", "mounts_under", "unmount_all"]

log = structlog.get_logger("sim.subpaths")

MS_BIND: Final = 4096
MS_REC: Final = 16384
MNT_DETACH: Final = 2
_libc = ctypes.CDLL(None, use_errno=True)


class SubPathError(ConfigError):
    """A subPath that cannot be mounted: the container stays Waiting."""


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _walk_nofollow(base: str, parts: list[str], make: bool, mode: int) -> int:
    """An O_PATH handle on base/parts, opened one component at a time without following a
    symlink; with `make`, missing directories are created on the way."""
    fd = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for part in parts:
            if part in ("", "."):
                continue
            if part == "..":
                raise OSError(f"{part!r} in a subPath")
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
            nxt = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError(f"{part!r} is a symlink")
        return fd
    except BaseException:
        os.close(fd)
        raise


def bind_sub_path(volume_path: str, sub_path: str, target: Path, mount: str, container: str) -> str:
    """Bind volume_path/sub_path onto `target` (made here) after the kubelet's checks;
    returns `target`. Raises SubPathError with the kubelet's message."""
    parts = sub_path.split("/")
    full = os.path.join(volume_path, sub_path)
    try:
        if not os.path.lexists(full):
            os.close(_walk_nofollow(volume_path, parts, True, 0o777))
    except OSError as exc:
        log.warning("subPath escapes its volume", mount=mount, container=container, error=str(exc))
        raise SubPathError(
            f'failed to create subPath directory for volumeMount "{mount}" of container '
            f'"{container}"'
        ) from None
    base = os.path.realpath(volume_path)
    resolved = os.path.realpath(full)
    try:
        if not _within(resolved, base):
            raise OSError(f"subpath {resolved!r} not within volume path {base!r}")
        fd = _walk_nofollow(base, os.path.relpath(resolved, base).split("/"), False, 0)
    except OSError as exc:
        log.warning("subPath escapes its volume", mount=mount, container=container, error=str(exc))
        raise SubPathError(
            f'failed to prepare subPath for volumeMount "{mount}" of container "{container}"'
        ) from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            target.mkdir(exist_ok=True)
        else:
            target.touch(exist_ok=True)
        source = f"/proc/self/fd/{fd}".encode()
        if _libc.mount(source, str(target).encode(), None, MS_BIND | MS_REC, None) != 0:
            raise OSError(ctypes.get_errno(), f"bind-mount subPath onto {target}")
    finally:
        os.close(fd)
    return str(target)


def _unescape(field: str) -> str:
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mounts_under(directory: Path) -> list[str]:
    """This mount namespace's mount points at or below `directory`, deepest first."""
    top = str(directory).rstrip("/")
    points = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            point = _unescape(line.split()[4])
            if _within(point, top):
                points.append(point)
    return sorted(set(points), key=lambda p: -p.count("/"))


def unmount_all(directory: Path) -> None:
    """Detach every mount at or below `directory` (before removing its files)."""
    for point in mounts_under(directory):
        _libc.umount2(point.encode(), MNT_DETACH)
    remaining = mounts_under(directory)
    if remaining:
        raise OSError(f"cannot unmount {remaining[0]}: its files are kept")


def mount_overlay(lower: Path, upper: Path, work: Path, target: Path) -> None:
    """An overlay of the read-only `lower` on `target`, its writes in `upper`."""
    data = f"lowerdir={lower},upperdir={upper},workdir={work}".encode()
    if _libc.mount(b"overlay", str(target).encode(), b"overlay", 0, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount the image's root on {target}: {os.strerror(err)}")
