"""The simulator's image store: archives loaded by name, each image unpacked once.

`ImageStore(root)` keeps, under `root`:

- `unpacked/<algorithm>-<hex>/rootfs`: an image's root file system, unpacked once per manifest
  digest and shared read-only by every container of it (the runtime's overlay lower layer);
- with `keep_names` (the cluster's `--data-dir`, `DIR/images`), `images.json`: name -> digest
  and config, so a restart from the data directory keeps them.

Without a data directory the cluster's store is the user's image cache (`cache_dir()`): its
names are the run's own, and the unpacked images stay for the next run, which finds an
image it loads again already unpacked (unpacking a large image takes a while, and so would
removing it at exit). Simulators sharing it publish an image by renaming a finished
directory into place: the first wins, the others use it.

`load(archive)` stages the archive as an OCI layout (`archive.py`), checks and unpacks each
image that is not unpacked yet (`unpack.py`) and points its names at it: a name loaded again
moves to the new image, as `kind load` re-tags. Loads run one at a time in a worker thread:
they unpack files and run skopeo and umoci, which must not hold the simulator's event loop.
`lookup(reference)` is the `ImageLookup` the runtime asks (normalized as containerd does;
`repo@sha256:...` matches an image of that repository with that manifest digest).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any, Final

import structlog

from kubesim.images.archive import ArchiveError, stage_archive
from kubesim.images.reference import InvalidReference, parse
from kubesim.images.types import ImageConfig, ImageRecord
from kubesim.images.unpack import check_layers, image_of, unpack

__all__ = ["CACHE_ENV", "ImageStore", "cache_dir"]

log = structlog.get_logger("sim.images")

INDEX: Final = "images.json"
CACHE_ENV: Final = "JOBSET_SIM_IMAGE_CACHE"  # where unpacked images are cached, if set
_DIGEST: Final = re.compile(r"[a-z0-9]+:[a-f0-9]{32,128}")


def _config_json(config: ImageConfig) -> dict[str, Any]:
    return {
        "entrypoint": list(config.entrypoint),
        "cmd": list(config.cmd),
        "env": list(config.env),
        "workingDir": config.working_dir,
        "user": config.user,
    }


def _config_of(data: dict[str, Any]) -> ImageConfig:
    return ImageConfig(
        entrypoint=tuple(data.get("entrypoint") or ()),
        cmd=tuple(data.get("cmd") or ()),
        env=tuple(data.get("env") or ()),
        working_dir=str(data.get("workingDir") or ""),
        user=str(data.get("user") or ""),
    )


def cache_dir() -> Path:
    """The user's cache of unpacked images: $JOBSET_SIM_IMAGE_CACHE, else
    $XDG_CACHE_HOME/jobset-sim/images (~/.cache/jobset-sim/images)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jobset-sim" / "images"


class ImageStore:
    """Loaded images by normalized name (see the module docstring)."""

    def __init__(self, root: Path, keep_names: bool = True) -> None:
        from kubesim.apiserver.core.statedir import check_existing

        self.root = root
        self.keep_names = keep_names
        check_existing(root)  # under --data-dir: only this user's, as the rest of its state
        self._records: dict[str, ImageRecord] = {}
        self._lock = threading.Lock()
        if keep_names:
            self._read_index()

    # ------------------------------------------------------------------ lookups

    def lookup(self, reference: str) -> ImageRecord | None:
        try:
            ref = parse(reference)
        except InvalidReference:
            return None
        if not ref.digest:
            return self._records.get(str(ref))
        for name, record in self._records.items():
            if record.digest == ref.digest and parse(name).repository == ref.repository:
                return record
        return None

    def has_repository(self, reference: str) -> bool:
        """True when some image of `reference`'s repository is loaded (any tag or digest)."""
        try:
            repository = parse(reference).repository
        except InvalidReference:
            return False
        return any(parse(name).repository == repository for name in self._records)

    def images(self) -> list[ImageRecord]:
        return sorted(self._records.values(), key=lambda r: r.name)

    # ------------------------------------------------------------------ loading

    async def load(self, archive: Path) -> list[ImageRecord]:
        """Load `archive` off the event loop; its images' records (ArchiveError if refused)."""
        return await asyncio.to_thread(self.load_blocking, archive)

    def load_blocking(self, archive: Path) -> list[ImageRecord]:
        with self._lock:
            self.make_dirs()  # on the first load: a cluster that loads nothing makes nothing
            return self._load(archive)

    def make_dirs(self) -> None:
        from kubesim.apiserver.core.statedir import private_dir

        private_dir(self.root)
        private_dir(self.root / "unpacked")

    def _load(self, archive: Path) -> list[ImageRecord]:
        with tempfile.TemporaryDirectory(prefix="stage-", dir=self.root) as tmp:
            layout = Path(tmp) / "layout"
            layout.mkdir()
            staged = stage_archive(archive, layout)
            if not any(image.names for image in staged):
                raise ArchiveError(f"{archive}: no image in it has a name to run it by")
            loaded: list[ImageRecord] = []
            for image in staged:
                if not image.names:
                    log.warning("image without a name not loaded", archive=str(archive))
                    continue
                rootfs, info = self._unpacked(layout, image.tag, Path(tmp))
                for name in image.names:
                    record = ImageRecord(name, info.digest, rootfs, info.config)
                    self._records[name] = record
                    loaded.append(record)
                    log.info("image loaded", image=name, digest=info.digest)
            if self.keep_names:
                self._write_index()
            return loaded

    def _unpacked(self, layout: Path, tag: str, scratch: Path) -> tuple[Path, Any]:
        """The root of the layout's image `tag`, unpacked now unless it already is."""
        info = image_of(layout, tag)
        final = self.root / "unpacked" / info.digest.replace(":", "-")
        if not (final / "rootfs").is_dir():
            check_layers(layout, info, self.root)
            bundle = scratch / f"bundle-{tag}"
            unpack(layout, info, bundle)
            try:
                os.rename(bundle, final)
            except OSError:
                if not (final / "rootfs").is_dir():
                    raise  # not another simulator's copy of the same image
                log.info("image unpacked meanwhile by another simulator", digest=info.digest)
        return final / "rootfs", info

    # ------------------------------------------------------------------ index

    def _read_index(self) -> None:
        try:
            data = json.loads((self.root / INDEX).read_text())
        except (OSError, ValueError):
            return
        for name, entry in (data.get("images") or {}).items():
            digest = str(entry.get("digest") or "")
            if not _DIGEST.fullmatch(digest):
                continue  # a digest names a directory: nothing else is trusted as one
            rootfs = self.root / "unpacked" / digest.replace(":", "-") / "rootfs"
            if rootfs.is_dir():
                config = _config_of(entry.get("config") or {})
                self._records[name] = ImageRecord(name, digest, rootfs, config)

    def _write_index(self) -> None:
        images = {
            r.name: {"digest": r.digest, "config": _config_json(r.config)}
            for r in self._records.values()
        }
        tmp = self.root / f"{INDEX}.tmp"
        tmp.write_text(json.dumps({"images": images}, indent=1, sort_keys=True))
        os.replace(tmp, self.root / INDEX)
