"""Volumes as files: what each volume of a pod holds, where each container mounts it, and the
kubelet's atomic writer that publishes a volume's files.

`volume_files` and `container_mounts` are pure. `publish` writes a directory the way the
kubelet's AtomicWriter does: the files in a timestamped `..<ts>` directory, a `..data` symlink
to it, and for each top-level entry a symlink through `..data`; an update writes a new
directory and swaps `..data` with one rename, so a reader never sees half an update and a
process watching the files (a webhook server reloading its certificate) sees the change
through its bind mount.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kubesim.kubelet.envvars import ConfigError, Lookup, field_ref, resource_field_ref
from kubesim.machinery import gobase64
from kubesim.machinery.volumepaths import safe_relative

__all__ = [
    "SA_MOUNT_PATH",
    "Mount",
    "MountError",
    "checked_name",
    "checked_volume",
    "claim_directory",
    "container_mounts",
    "publish",
    "volume_files",
]

SA_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
SA_TOKEN_SECONDS: Final = 3607  # what kube-apiserver gives the kube-api-access token
DEFAULT_MODE: Final = 0o644

# Files of a volume: relative path -> (content, mode)
Files = dict[str, tuple[bytes, int]]
# (namespace, serviceAccount, audience, expirationSeconds) -> a token
TokenSource = Callable[[str, str, str, int], str]


class MountError(Exception):
    """A volume cannot be set up yet (the kubelet keeps the pod in ContainerCreating)."""


@dataclass(frozen=True)
class Mount:
    """One volumeMount of a container: the volume, where, which sub-path, read-only."""

    volume: str
    path: str
    sub_path: str = ""
    read_only: bool = False


def checked_name(what: str, volume: str, value: str) -> str:
    """`value`, a name or path the kubelet joins to a directory of its own, when it cannot
    lead out of it; else MountError. The API refuses such values, so only an object that
    reached the store another way gets here: its pod fails to start, nothing is written."""
    if not safe_relative(value):
        raise MountError(
            f'MountVolume.SetUp failed for volume "{volume}" : invalid {what} {value!r}: '
            "must be a relative path that does not contain '..'"
        )
    return value


def checked_volume(name: str) -> str:
    """A volume's name, which names its directory: one path element."""
    if "/" in name:
        raise MountError(f'volume "{name}": invalid name: must not contain "/"')
    return checked_name("name", name, name)


def _b64(volume: str, kind: str, key: str, value: Any) -> bytes:
    try:
        return gobase64.decode(str(value))
    except gobase64.CorruptInputError as exc:
        raise MountError(
            f'MountVolume.SetUp failed for volume "{volume}" : {kind.lower()} key {key!r}: {exc}'
        ) from None


def _decode(kind: str, obj: Mapping[str, Any], volume: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    encoded, plain = ("data", "stringData") if kind == "Secret" else ("binaryData", "data")
    out.update({k: _b64(volume, kind, k, v) for k, v in (obj.get(encoded) or {}).items()})
    out.update({k: str(v).encode() for k, v in (obj.get(plain) or {}).items()})
    return out


def _keyed(
    kind: str,
    namespace: str,
    source: Mapping[str, Any],
    lookup: Lookup,
    default_mode: int,
    volume: str,
) -> Files:
    name = str(source.get("secretName") or source.get("name") or "")
    obj = lookup(kind, namespace, name)
    if obj is None:
        if source.get("optional"):
            return {}
        raise MountError(
            f'MountVolume.SetUp failed for volume "{volume}" : {kind.lower()} "{name}" not found'
        )
    data = _decode(kind, obj, volume)
    items = source.get("items")
    if not items:
        return {checked_name("key", volume, k): (v, default_mode) for k, v in data.items()}
    out: Files = {}
    for item in items:
        key = str(item.get("key") or "")
        if key not in data:
            if source.get("optional"):
                continue
            raise MountError(
                f'MountVolume.SetUp failed for volume "{volume}" : configmap references '
                f"non-existent config key: {key}"
                if kind == "ConfigMap"
                else f'MountVolume.SetUp failed for volume "{volume}" : references '
                f"non-existent secret key: {key}"
            )
        mode = item.get("mode")
        path = checked_name("path", volume, str(item.get("path") or key))
        out[path] = (data[key], default_mode if mode is None else mode)
    return out


def _downward(pod: Mapping[str, Any], items: list[Mapping[str, Any]], default_mode: int) -> Files:
    out: Files = {}
    containers = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
    for item in items:
        mode = item.get("mode")
        mode = default_mode if mode is None else mode
        try:
            if "fieldRef" in item:
                value = field_ref(pod, str(item["fieldRef"].get("fieldPath") or ""))
            else:
                ref = item.get("resourceFieldRef") or {}
                value = resource_field_ref(containers.get(ref.get("containerName")) or {}, ref)
        except ConfigError as exc:
            raise MountError(str(exc)) from exc
        out[str(item.get("path") or "")] = (value.encode(), mode)
    return out


def volume_files(
    pod: Mapping[str, Any], volume: Mapping[str, Any], lookup: Lookup, tokens: TokenSource
) -> Files | None:
    """The files of a Secret / ConfigMap / downwardAPI / projected volume; None for a volume
    that is a directory (emptyDir, hostPath, a claim's volume, and the kinds the simulator has
    no storage for).
    Raises MountError while a source is missing."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    name = str(volume.get("name") or "")
    if "secret" in volume:
        src = volume["secret"] or {}
        return _keyed("Secret", namespace, src, lookup, src.get("defaultMode", DEFAULT_MODE), name)
    if "configMap" in volume:
        src = volume["configMap"] or {}
        return _keyed(
            "ConfigMap", namespace, src, lookup, src.get("defaultMode", DEFAULT_MODE), name
        )
    if "downwardAPI" in volume:
        src = volume["downwardAPI"] or {}
        return _downward(pod, src.get("items") or [], src.get("defaultMode", DEFAULT_MODE))
    if "projected" in volume:
        src = volume["projected"] or {}
        mode = src.get("defaultMode", DEFAULT_MODE)
        out: Files = {}
        account = str((pod.get("spec") or {}).get("serviceAccountName") or "default")
        for source in src.get("sources") or []:
            if "secret" in source:
                out.update(_keyed("Secret", namespace, source["secret"], lookup, mode, name))
            elif "configMap" in source:
                out.update(_keyed("ConfigMap", namespace, source["configMap"], lookup, mode, name))
            elif "downwardAPI" in source:
                out.update(_downward(pod, source["downwardAPI"].get("items") or [], mode))
            elif "serviceAccountToken" in source:
                tok = source["serviceAccountToken"]
                seconds = int(tok.get("expirationSeconds") or SA_TOKEN_SECONDS)
                token = tokens(namespace, account, str(tok.get("audience") or ""), seconds)
                out[str(tok.get("path") or "token")] = (token.encode(), mode)
        return out
    return None


def claim_directory(
    volume: Mapping[str, Any],
    namespace: str,
    get: Callable[[str, str, str], Mapping[str, Any] | None],
) -> tuple[str, bool]:
    """The host directory behind a `persistentVolumeClaim` volume (its bound volume's
    `hostPath` or `local` path) and whether the pod mounts it read-only. `get(plural,
    namespace, name)` reads the store. Raises MountError while the claim is missing or
    unbound (the kubelet keeps the pod in ContainerCreating)."""
    source = volume.get("persistentVolumeClaim") or {}
    name = str(source.get("claimName") or "")
    vol = str(volume.get("name") or "")
    claim = get("persistentvolumeclaims", namespace, name)
    if claim is None:
        raise MountError(f'persistentvolumeclaim "{name}" not found')
    pv_name = str((claim.get("spec") or {}).get("volumeName") or "")
    if not pv_name or (claim.get("status") or {}).get("phase") != "Bound":
        raise MountError(
            f'MountVolume.SetUp failed for volume "{vol}" : PVC {namespace}/{name} is not bound'
        )
    pv = get("persistentvolumes", "", pv_name)
    spec = (pv or {}).get("spec") or {}
    path = str((spec.get("hostPath") or spec.get("local") or {}).get("path") or "")
    if not path:
        raise MountError(
            f'MountVolume.SetUp failed for volume "{pv_name}" : the simulator mounts only '
            f"hostPath and local persistent volumes"
        )
    return path, bool(source.get("readOnly"))


def container_mounts(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[Mount]:
    """The container's volumeMounts, parents before children (the ServiceAccount token's
    among them: the API server's ServiceAccount admission puts it in the pod spec)."""
    spec = pod.get("spec") or {}
    volumes = {v.get("name") for v in spec.get("volumes") or []}
    out: list[Mount] = []
    for m in container.get("volumeMounts") or []:
        name = str(m.get("name") or "")
        if name not in volumes:
            raise MountError(f'volume "{name}" of volumeMount not found in the pod')
        sub = str(m.get("subPath") or "")
        if sub:
            checked_name("subPath", name, sub)
        out.append(
            Mount(
                name,
                os.path.normpath(str(m.get("mountPath") or "/")),
                sub,
                bool(m.get("readOnly")),
            )
        )
    return sorted(out, key=lambda m: m.path.count("/"))


def publish(directory: Path, files: Files, owner_gid: int | None = None) -> bool:
    """Write `files` into `directory` atomically (AtomicWriter layout); False if they are
    already what it holds."""
    for rel in files:
        checked_name("path", directory.name, rel)
    data_link = directory / "..data"
    if _data_dir(directory) is not None and _current(directory) == files:
        return False
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o755)
    stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    target = directory / stamp
    target.mkdir(mode=0o755)
    for rel, (content, mode) in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.chmod(path, mode)
        if owner_gid is not None:
            os.chown(path, -1, owner_gid)
    old = _data_dir(directory)
    tmp_link = directory / "..data_tmp"
    if tmp_link.is_symlink():
        tmp_link.unlink()
    os.symlink(stamp, tmp_link)
    os.replace(tmp_link, data_link)
    tops = {rel.split("/", 1)[0] for rel in files}
    for entry in directory.iterdir():
        if entry.name.startswith(".."):
            continue
        if entry.name not in tops:
            entry.unlink()
    for top in tops:
        link = directory / top
        if not link.is_symlink():
            os.symlink(f"..data/{top}", link)
    if old is not None and old != stamp:
        shutil.rmtree(directory / old, ignore_errors=True)
    return True


def _data_dir(directory: Path) -> str | None:
    """The name of the timestamped directory `..data` points to; None unless `..data` is a
    link to a `..<ts>` directory right inside `directory` (never a link out of it: a
    container that could write the volume might have relinked it, and the refresh must not
    read or delete what such a link leads to)."""
    try:
        target = os.readlink(directory / "..data")
    except OSError:
        return None
    if "/" in target or not target.startswith("..") or target in ("..", "..data"):
        return None
    try:
        st = os.lstat(directory / target)
    except OSError:
        return None
    return target if stat.S_ISDIR(st.st_mode) else None


def _current(directory: Path) -> Files:
    """What the volume holds now, read without following any symlink."""
    out: Files = {}
    name = _data_dir(directory)
    if name is None:
        return out
    root = directory / name
    for dirpath, _dirs, names in os.walk(root, followlinks=False):
        for n in names:
            path = Path(dirpath) / n
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                return {}  # not what the writer made: rewritten
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as f:
                out[str(path.relative_to(root))] = (f.read(), st.st_mode & 0o7777)
    return out
