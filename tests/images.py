"""Tiny images built here, without network: busybox-static in an umoci layout, archived.

`tiny_image` builds one with an Entrypoint, Cmd, Env, WorkingDir and a marker file, and
returns its oci-archive and docker-archive; `hostile_layout` writes an OCI layout whose
one layer tries every way out of its root. Both need umoci and skopeo (Debian packages,
installed by `make test`) and the busybox-static package's /bin/busybox.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

BUSYBOX = Path("/bin/busybox")  # busybox-static: no shared libraries to carry
MARKER = "tiny-image-root"


@dataclass(frozen=True)
class TinyImage:
    name: str
    oci_archive: Path
    docker_archive: Path


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def tiny_image(
    tmp: Path, name: str = "example.com/tiny:v1", cmd: tuple[str, ...] = ()
) -> TinyImage:
    layout, bundle = tmp / "layout", tmp / "bundle"
    _run("umoci", "init", "--layout", str(layout))
    _run("umoci", "new", "--image", f"{layout}:t")
    _run("umoci", "unpack", "--image", f"{layout}:t", str(bundle))
    root = bundle / "rootfs"
    for d in ("bin", "etc", "srv", "tmp"):
        (root / d).mkdir(exist_ok=True)
    shutil.copy2(BUSYBOX, root / "bin" / "busybox")
    for applet in ("sh", "cat", "ls", "echo", "sleep", "tar", "id", "env", "pwd", "nc", "httpd"):
        (root / "bin" / applet).symlink_to("busybox")
    (root / "etc" / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/srv:/bin/sh\n"
    )
    (root / "etc" / "group").write_text("root:x:0:\napp:x:1000:\n")
    (root / "srv" / "marker").write_text(MARKER + "\n")
    _run("umoci", "repack", "--image", f"{layout}:t", str(bundle))
    script = cmd or ("echo cwd=$(pwd) greeting=$GREETING; cat /srv/marker; sleep 3600",)
    config = ["--config.entrypoint", "/bin/sh", "--config.entrypoint", "-c"]
    for part in script:
        config += ["--config.cmd", part]
    _run(
        "umoci", "config", "--image", f"{layout}:t", *config,
        "--config.env", "GREETING=from-image", "--config.env", "PATH=/bin",
        "--config.workingdir", "/srv",
    )  # fmt: skip
    oci, docker = tmp / "tiny-oci.tar", tmp / "tiny-docker.tar"
    _run("skopeo", "copy", "--quiet", f"oci:{layout}:t", f"oci-archive:{oci}:{name}")
    _run("skopeo", "copy", "--quiet", f"oci:{layout}:t", f"docker-archive:{docker}:{name}")
    return TinyImage(name, oci, docker)


def _member(tar: tarfile.TarFile, name: str, data: bytes = b"", **kw: object) -> None:
    info = tarfile.TarInfo(name)
    info.mode = 0o644
    info.size = len(data)
    for key, value in kw.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)


def escape_layer(host_dir: Path) -> bytes:
    """A layer whose members try to write to `host_dir` every way a tar can."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _member(tar, "../../../../../../" + str(host_dir).lstrip("/") + "/dotdot", b"x")
        _member(tar, str(host_dir) + "/absolute", b"x")
        _member(tar, "out", type=tarfile.SYMTYPE, linkname=str(host_dir))
        _member(tar, "out/through-absolute-link", b"x")
        _member(tar, "up", type=tarfile.SYMTYPE, linkname="../../../../../../../" + str(host_dir))
        _member(tar, "up/through-relative-link", b"x")
        _member(tar, "etc/hostname", b"image's own")
        _member(tar, "hard", type=tarfile.LNKTYPE, linkname="../../../../../etc/hostname")
    return buf.getvalue()


def huge_layer() -> bytes:
    """A layer whose one member declares a terabyte and carries a few bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _member(tar, "small", b"x")
    data = bytearray(buf.getvalue())
    info = tarfile.TarInfo("huge")
    info.size = 1 << 40
    header = info.tobuf(format=tarfile.PAX_FORMAT)
    return bytes(data[: 512 + 512]) + header + b"only a few bytes"


def oci_archive_of_layer(
    tmp: Path, layer: bytes, name: str, extra: dict[str, bytes] | None = None
) -> Path:
    """An oci-archive of one image made of `layer`, named `name`; `extra` adds raw members."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest

    layer_digest = blob(layer)
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Cmd": ["/bin/sh"]},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": blob(config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest,
                    "size": len(layer),
                }
            ],
        }
    ).encode()
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": blob(manifest),
                "size": len(manifest),
                "annotations": {"org.opencontainers.image.ref.name": name},
            }
        ],
    }
    path = tmp / "archive.tar"
    with tarfile.open(path, "w") as tar:
        _member(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _member(tar, "index.json", json.dumps(index).encode())
        for digest, data in blobs.items():
            _member(tar, "blobs/sha256/" + digest.split(":")[1], data)
        for member, data in (extra or {}).items():
            _member(tar, member, data)
    return path
