"""What an image archive holds, and turning it into an OCI image layout umoci can unpack.

Two formats, as `kind load image-archive` (containerd's importer) reads them:

- **docker-archive** (`docker save`, `podman save`, `skopeo copy ... docker-archive:`): a tar
  with `manifest.json`, a list of images each with `RepoTags`; skopeo copies image *i*
  (`docker-archive:PATH:@i`) into the layout.
- **oci-archive** (`skopeo copy ... oci-archive:`, `buildah push ... oci-archive:`): a tar of an
  OCI image layout (`oci-layout`, `index.json`, `blobs/`). Its names are the index entries'
  `io.containerd.image.name` annotation, else `org.opencontainers.image.ref.name` when that is
  a whole reference (a bare tag names nothing, as containerd's importer without a base name).
  Only `blobs/<algorithm>/<hex>` regular files are copied out of it: any other member
  (`../x`, `/etc/x`, links, devices) is ignored, so the archive cannot write outside the layout.

Both land in a layout where image *i* is tagged `img<i>`. The archive itself is read with
bounded JSON reads and never extracted as a whole.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from kubesim.images.reference import InvalidReference, normalize

__all__ = [
    "ArchiveError",
    "ArchiveImage",
    "blob_path",
    "read_layout_json",
    "run_tool",
    "stage_archive",
    "tool",
]

MAX_JSON: Final = 16 * 1024 * 1024  # manifest.json, index.json, a manifest or a config
DOCKER_MANIFEST: Final = "manifest.json"
OCI_INDEX: Final = "index.json"
OCI_LAYOUT: Final = "oci-layout"
REF_NAME: Final = "org.opencontainers.image.ref.name"
CONTAINERD_NAME: Final = "io.containerd.image.name"
INDEX_TYPES: Final = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_BLOB: Final = re.compile(r"(?:\./)?blobs/([a-z0-9]+)/([a-f0-9]{32,128})")
TOOL_TIMEOUT: Final = 3600.0  # seconds skopeo or umoci may take over one image
HOST_ARCH: Final = "amd64"
MAX_MEMBERS: Final = 100_000  # files in the archive itself (an image's layers are separate)


class ArchiveError(ValueError):
    """An archive that cannot be loaded; the message names the archive and the rule."""


@dataclass(frozen=True)
class ArchiveImage:
    """One image of an archive: its normalized names and its tag in the staged layout."""

    names: tuple[str, ...]
    tag: str


def tool(name: str) -> str:
    """The path of a Debian tool the image store runs, or a clear error naming the package."""
    path = shutil.which(name)
    if path is None:
        raise ArchiveError(
            f"loading images needs {name} (the Debian package '{name}'; `make test` installs "
            f"it, or: apt-get install {name})"
        )
    return path


def run_tool(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, timeout=TOOL_TIMEOUT, check=False)
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise ArchiveError(f"{Path(argv[0]).name} failed: {why[-1] if why else done.returncode}")


def _read_json(f: IO[bytes] | None, what: str) -> Any:
    if f is None:
        raise ArchiveError(f"{what}: not a regular file")
    data = f.read(MAX_JSON + 1)
    if len(data) > MAX_JSON:
        raise ArchiveError(f"{what}: larger than {MAX_JSON} bytes")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ArchiveError(f"{what}: not JSON ({exc})") from None


def _names(refs: list[Any], archive: Path) -> tuple[str, ...]:
    out = []
    for ref in refs:
        try:
            out.append(normalize(str(ref)))
        except InvalidReference as exc:
            raise ArchiveError(f"{archive}: image name {ref!r}: {exc}") from None
    return tuple(out)


def stage_archive(archive: Path, layout: Path) -> list[ArchiveImage]:
    """Copy the images of `archive` into the OCI layout `layout` (a new directory)."""
    try:
        tar = tarfile.open(archive, "r:*")
    except (OSError, tarfile.TarError) as exc:
        raise ArchiveError(f"{archive}: not a readable tar archive ({exc})") from None
    with tar:
        members = _regular_members(tar, archive)
        if DOCKER_MANIFEST in members:
            entries = _read_json(tar.extractfile(members[DOCKER_MANIFEST]), DOCKER_MANIFEST)
            return _stage_docker(archive, layout, entries)
        if OCI_INDEX in members and OCI_LAYOUT in members:
            return _stage_oci(archive, layout, tar, members)
    raise ArchiveError(
        f"{archive}: neither a docker-archive (no manifest.json) nor an oci-archive "
        "(no index.json and oci-layout)"
    )


def _regular_members(tar: tarfile.TarFile, archive: Path) -> dict[str, tarfile.TarInfo]:
    """The archive's regular files by name (the first of a name wins), at most MAX_MEMBERS."""
    members: dict[str, tarfile.TarInfo] = {}
    try:
        for count, member in enumerate(tar, 1):
            if count > MAX_MEMBERS:
                raise ArchiveError(f"{archive}: more than {MAX_MEMBERS} members")
            if member.isfile():
                members.setdefault(member.name.removeprefix("./"), member)
    except (OSError, tarfile.TarError) as exc:
        raise ArchiveError(f"{archive}: not a readable tar archive ({exc})") from None
    return members


def _stage_docker(archive: Path, layout: Path, entries: Any) -> list[ArchiveImage]:
    if not isinstance(entries, list) or not entries:
        raise ArchiveError(f"{archive}: manifest.json lists no image")
    skopeo = tool("skopeo")
    images = []
    for i, entry in enumerate(entries):
        tags = entry.get("RepoTags") if isinstance(entry, dict) else None
        names = _names(list(tags or []), archive)
        tag = f"img{i}"
        run_tool(
            [skopeo, "copy", "--quiet", f"docker-archive:{archive}:@{i}", f"oci:{layout}:{tag}"]
        )
        images.append(ArchiveImage(names, tag))
    return images


def _stage_oci(
    archive: Path, layout: Path, tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo]
) -> list[ArchiveImage]:
    index = _read_json(tar.extractfile(members[OCI_INDEX]), OCI_INDEX)
    blobs = layout / "blobs"
    for name, member in members.items():
        match = _BLOB.fullmatch(name)
        if match is None:
            continue  # anything but a blob is never written
        target = blobs / match.group(1) / match.group(2)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            source = tar.extractfile(member)
            assert source is not None  # a regular file
            with open(target, "xb") as out:
                shutil.copyfileobj(source, out)
        except (OSError, tarfile.TarError) as exc:
            raise ArchiveError(f"{archive}: {name}: {exc}") from None
    (layout / OCI_LAYOUT).write_text('{"imageLayoutVersion":"1.0.0"}')
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list) or not manifests:
        raise ArchiveError(f"{archive}: index.json lists no image")
    images, tagged = [], []
    for i, desc in enumerate(manifests):
        if not isinstance(desc, dict):
            raise ArchiveError(f"{archive}: index.json manifests[{i}] is not a descriptor")
        notes = desc.get("annotations") or {}
        ref = str(notes.get(CONTAINERD_NAME) or "")
        if not ref and any(c in str(notes.get(REF_NAME) or "") for c in "/:@"):
            ref = str(notes[REF_NAME])
        tag = f"img{i}"
        chosen = _platform_manifest(layout, desc, archive)
        tagged.append({**chosen, "annotations": {REF_NAME: tag}})
        images.append(ArchiveImage(_names([ref] if ref else [], archive), tag))
    (layout / OCI_INDEX).write_text(json.dumps({"schemaVersion": 2, "manifests": tagged}))
    return images


def blob_path(layout: Path, digest: str, what: str) -> Path:
    """Where the layout keeps the blob `digest` (a digest is checked before it names a file)."""
    algorithm, _, hexdigest = digest.partition(":")
    if not re.fullmatch(r"[a-z0-9]+", algorithm) or not re.fullmatch(
        r"[a-f0-9]{32,128}", hexdigest
    ):
        raise ArchiveError(f"{what}: invalid digest {digest!r}")
    return layout / "blobs" / algorithm / hexdigest


def read_layout_json(layout: Path, digest: str, what: str) -> Any:
    """A JSON blob of the layout by its digest (bounded)."""
    try:
        with open(blob_path(layout, digest, what), "rb") as f:
            return _read_json(f, what)
    except FileNotFoundError:
        raise ArchiveError(f"{what}: blob {digest} is not in the archive") from None


def _platform_manifest(layout: Path, desc: dict[str, Any], archive: Path) -> dict[str, Any]:
    """An index entry's image manifest: itself, or from a multi-platform index the
    linux/amd64 one, as containerd picks for this host."""
    seen = 0
    while desc.get("mediaType") in INDEX_TYPES:
        seen += 1
        if seen > 4:
            raise ArchiveError(f"{archive}: image indexes nested too deep")
        index = read_layout_json(layout, str(desc.get("digest") or ""), f"{archive}: image index")
        found = [
            m
            for m in index.get("manifests") or []
            if isinstance(m, dict)
            and (m.get("platform") or {}).get("os", "linux") == "linux"
            and (m.get("platform") or {}).get("architecture", HOST_ARCH) == HOST_ARCH
        ]
        if not found:
            raise ArchiveError(f"{archive}: no linux/{HOST_ARCH} image in its index")
        desc = found[0]
    return {k: desc[k] for k in ("mediaType", "digest", "size") if k in desc}
