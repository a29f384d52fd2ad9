"""The root of a `--run-image REPOSITORY=DIR` container: a small directory tree of its own with
the host's system directories bound read-only, DIR, and (when DIR is a virtualenv's `bin`) that
virtualenv, its base interpreter and the source directories of its editable installs, and
nothing else of the host: not /root, /home, /tmp,
/var/tmp, /srv, the checkout or the simulator's state. Writes go to the container's own tree
(a fresh one per instance); runc makes /proc, /dev and /sys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from kubesim.kubelet.ocispec import BindMount

__all__ = ["host_mounts", "make_root"]

SYSTEM_DIRS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The system files of /etc: users and groups, the dynamic linker's, name service, TLS
# roots, time zone and the like; not the host's secrets (shadow, ssh keys) or its own setup.
ETC_ENTRIES: Final = (
    "passwd group nsswitch.conf ld.so.cache ld.so.conf ld.so.conf.d ssl ca-certificates "
    "alternatives localtime timezone host.conf protocols services mime.types os-release "
    "debian_version gai.conf login.defs shells profile bash.bashrc environment inputrc "
    "python3 python3.11 mailcap magic"
).split()
# Directories the container's own tree starts with, and their modes.
SKELETON: Final = {
    "etc": 0o755, "tmp": 0o1777, "var": 0o755, "var/tmp": 0o1777, "root": 0o700,
    "home": 0o755, "run": 0o755, "proc": 0o555, "sys": 0o555, "dev": 0o755, "srv": 0o755,
}  # fmt: skip


def make_root(rootfs: Path) -> None:
    """The container's own tree; the host's merged-/usr links (/bin -> usr/bin) as links."""
    rootfs.mkdir(mode=0o755)
    for rel, mode in SKELETON.items():
        path = rootfs / rel
        path.mkdir(exist_ok=True)
        os.chmod(path, mode)
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            os.symlink(os.readlink(top), rootfs / top.lstrip("/"))


def _venv_dirs(directory: Path) -> list[Path]:
    """When `directory` is a virtualenv's bin: the virtualenv, its base interpreter's prefix
    (from pyvenv.cfg's `home`), and the directories its `.pth` files add to `sys.path` (an
    editable install's sources), unless under a system directory already bound."""
    cfg = directory.parent / "pyvenv.cfg"
    if directory.name != "bin" or not cfg.is_file():
        return []
    out = [directory.parent]
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            out.append(Path(value.strip()).resolve().parent)
    for pth in directory.parent.glob("lib/python*/site-packages/*.pth"):
        for line in pth.read_text(errors="replace").splitlines():
            path = Path(line.strip())
            if path.is_absolute() and path.is_dir():
                out.append(path.resolve())
    return [p for p in out if p != Path("/") and not any(p.is_relative_to(s) for s in SYSTEM_DIRS)]


def host_mounts(directory: Path) -> list[BindMount]:
    """What of the host a `--run-image` container sees, read-only, parents first."""
    out = [
        BindMount(top, top, True)
        for top in SYSTEM_DIRS
        if os.path.isdir(top) and not os.path.islink(top)
    ]
    out += [
        BindMount(f"/etc/{name}", f"/etc/{name}", True)
        for name in ETC_ENTRIES
        if os.path.exists(f"/etc/{name}")
    ]
    shown = [Path(m.source) for m in out]
    for path in [*_venv_dirs(directory), directory]:
        if not any(path.is_relative_to(s) for s in shown):
            out.append(BindMount(str(path), str(path), True))
            shown.append(path)
    return sorted(out, key=lambda m: m.destination.count("/"))
