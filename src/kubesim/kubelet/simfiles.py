"""The emptyDir volumes of simulated containers.

A simulated container has no filesystem except its pod's emptyDir volumes, held here per pod
as `(volume, path inside the volume) -> content`. The kubelet shows a container the files of
its emptyDir mounts (`view`, absolute paths as the container sees them), and applies what
the container's program wrote (`apply`): so a file written before a container restart,
including a RestartAllContainers restart of the whole pod, is still there afterwards, and
it goes when the pod goes, as in Kubernetes. (Real processes have real directories:
`processes.py`.)

Pure: no I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, MutableMapping
from typing import Any

from kubesim.kubelet.volumes import Mount, MountError, container_mounts

__all__ = ["PodFiles", "apply", "emptydir_mounts", "view", "writable_paths"]

PodFiles = MutableMapping[tuple[str, str], str]


def emptydir_mounts(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[Mount]:
    """The container's mounts of the pod's emptyDir volumes (none when a mount names a
    volume the pod lacks: the API server would have refused such a pod)."""
    spec = pod.get("spec") or {}
    empty = {str(v.get("name")) for v in spec.get("volumes") or [] if "emptyDir" in v}
    try:
        mounts = container_mounts(pod, container)
    except MountError:
        return []
    return [m for m in mounts if m.volume in empty]


def _inside(m: Mount, rel: str) -> str | None:
    """`rel` (a path in the volume) as a path under the mount, if the mount shows it."""
    if not m.sub_path:
        return rel
    prefix = m.sub_path.strip("/") + "/"
    return rel[len(prefix) :] if rel.startswith(prefix) else None


def view(files: Mapping[tuple[str, str], str], mounts: list[Mount]) -> dict[str, str]:
    """What the container sees: absolute path -> content."""
    out: dict[str, str] = {}
    for m in mounts:
        for (volume, rel), content in files.items():
            if volume != m.volume:
                continue
            shown = _inside(m, rel)
            if shown is not None:
                out[posixpath.join(m.path, shown)] = content
    return out


def writable_paths(mounts: list[Mount]) -> list[str]:
    return [m.path for m in mounts if not m.read_only]


def _locate(mounts: list[Mount], path: str) -> tuple[str, str] | None:
    """The (volume, path in the volume) a write to `path` lands in: the deepest writable
    mount that contains it."""
    path = posixpath.normpath(path)
    best: Mount | None = None
    for m in mounts:
        if m.read_only or not (path == m.path or path.startswith(m.path.rstrip("/") + "/")):
            continue
        if best is None or len(m.path) > len(best.path):
            best = m
    if best is None or path == best.path:
        return None
    rel = posixpath.relpath(path, best.path)
    if best.sub_path:
        rel = posixpath.join(best.sub_path.strip("/"), rel)
    return best.volume, rel


def apply(files: PodFiles, mounts: list[Mount], path: str, content: str | None) -> None:
    """One write of a container (`content` None removes the file)."""
    where = _locate(mounts, path)
    if where is None:
        return
    if content is None:
        files.pop(where, None)
    else:
        files[where] = content
