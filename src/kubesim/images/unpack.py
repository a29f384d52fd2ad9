"""Unpack one image of a staged OCI layout into a root file system, once and safely.

umoci applies the layers in order with their whiteouts (`.wh.` files and opaque
directories) and resolves every path inside the root it builds (securejoin), as containerd's
applier does: `../x` and `/x` land inside the root, and a link in a layer that points out
(`l -> /etc`, then `l/passwd`) is followed inside the root, never on the host.

Before that each layer is read once as a stream here, and the load is refused when:

- a layer is not a tar stream to its end (a member declaring more bytes than follow);
- a layer is compressed as this umoci cannot read (zstd);
- the layers' members add up to more bytes than the store's file system has free, or hold
  more than MAX_ENTRIES members: a layer of compressed zeros cannot fill the disk.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from kubesim.images.archive import ArchiveError, blob_path, read_layout_json, run_tool, tool
from kubesim.images.types import ImageConfig

__all__ = ["LayoutImage", "check_layers", "image_of", "unpack"]

MAX_ENTRIES: Final = 2_000_000  # members over all layers of one image
RESERVE: Final = 256 * 1024 * 1024  # bytes left free on the store's file system


@dataclass(frozen=True)
class LayoutImage:
    """An image of the staged layout: its manifest digest, config and layers."""

    tag: str
    digest: str
    config: ImageConfig
    layers: tuple[dict[str, Any], ...]


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def image_of(layout: Path, tag: str) -> LayoutImage:
    """The manifest, config and layers of the layout's image tagged `tag`."""
    # index.json is the store's own (written by skopeo or by archive.py), not the archive's
    entries = json.loads((layout / "index.json").read_text())["manifests"]
    desc = next(
        d
        for d in entries
        if (d.get("annotations") or {}).get("org.opencontainers.image.ref.name") == tag
    )
    digest = str(desc["digest"])
    manifest = read_layout_json(layout, digest, f"image {tag}: manifest")
    config_digest = str((manifest.get("config") or {}).get("digest") or "")
    blob = read_layout_json(layout, config_digest, f"image {tag}: config")
    conf = blob.get("config") or {} if isinstance(blob, dict) else {}
    config = ImageConfig(
        entrypoint=_strings(conf.get("Entrypoint")),
        cmd=_strings(conf.get("Cmd")),
        env=_strings(conf.get("Env")),
        working_dir=str(conf.get("WorkingDir") or ""),
        user=str(conf.get("User") or ""),
    )
    layers = tuple(d for d in manifest.get("layers") or [] if isinstance(d, dict))
    return LayoutImage(tag, digest, config, layers)


def _open_layer(layout: Path, layer: dict[str, Any]) -> IO[bytes]:
    media = str(layer.get("mediaType") or "")
    path = blob_path(layout, str(layer.get("digest") or ""), "layer")
    raw: IO[bytes] = open(path, "rb")
    if media.endswith("zstd"):
        raw.close()
        raise ArchiveError(f"layer {layer.get('digest')}: zstd layers are not supported")
    if media.endswith("gzip") or raw.peek(2)[:2] == b"\x1f\x8b":  # type: ignore[attr-defined]
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


def check_layers(layout: Path, image: LayoutImage, store: Path) -> int:
    """Read every layer through; the bytes its members declare, or ArchiveError (see above)."""
    budget = shutil.disk_usage(store).free - RESERVE
    total = entries = 0
    for layer in image.layers:
        what = f"layer {layer.get('digest')}"
        try:
            with (
                _open_layer(layout, layer) as stream,
                tarfile.open(fileobj=stream, mode="r|") as tar,
            ):
                for member in tar:
                    entries += 1
                    total += max(member.size, 0)
                    if total > budget:
                        raise ArchiveError(
                            f"{what}: the image unpacks to more than the {max(budget, 0)} bytes "
                            f"free under {store}"
                        )
                    if entries > MAX_ENTRIES:
                        raise ArchiveError(f"{what}: more than {MAX_ENTRIES} files in the image")
        except FileNotFoundError:
            raise ArchiveError(f"{what}: not in the archive") from None
        except (OSError, EOFError, tarfile.TarError) as exc:
            raise ArchiveError(f"{what}: not a valid tar stream ({exc})") from None
    return total


def unpack(layout: Path, image: LayoutImage, bundle: Path) -> None:
    """`umoci unpack` the image into `bundle` (its root file system is `bundle/rootfs`)."""
    run_tool([tool("umoci"), "unpack", "--image", f"{layout}:{image.tag}", str(bundle)])
