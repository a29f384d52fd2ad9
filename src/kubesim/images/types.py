"""What the runtime needs of an image: its unpacked root and its config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["ImageConfig", "ImageLookup", "ImageRecord"]


@dataclass(frozen=True)
class ImageConfig:
    """The parts of an OCI image config that decide how a container starts."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # "NAME=value", in the image's order
    working_dir: str = ""
    user: str = ""  # "uid", "uid:gid", "name" or "name:group", resolved in the image's root


@dataclass(frozen=True)
class ImageRecord:
    """One loaded image: its normalized name, digest, read-only root and config."""

    name: str  # normalized as containerd does, e.g. docker.io/library/busybox:latest
    digest: str  # the manifest's "sha256:..."
    rootfs: Path  # unpacked layers; shared read-only, an overlay's lower directory
    config: ImageConfig


class ImageLookup(Protocol):
    """Finds a loaded image by the reference a pod names (normalized like containerd)."""

    def lookup(self, reference: str) -> ImageRecord | None: ...
