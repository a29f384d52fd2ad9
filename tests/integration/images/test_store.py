"""The image store with the real skopeo and umoci: archives of both formats, names as
containerd normalizes them, each image unpacked once, and hostile archives kept inside."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from kubesim.images.archive import ArchiveError
from kubesim.images.resolve import process_of
from kubesim.images.store import ImageStore
from kubesim.images.types import ImageRecord
from tests.images import (
    MARKER,
    TinyImage,
    escape_layer,
    huge_layer,
    oci_archive_of_layer,
    tiny_image,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyImage:
    return tiny_image(tmp_path_factory.mktemp("tiny"), name="tiny:v1")


@pytest.mark.parametrize("fmt", ["oci_archive", "docker_archive"])
async def test_loads_an_archive_under_its_normalized_name(
    tiny: TinyImage,
    fmt: str,
    tmp_path: Path,
) -> None:
    store = ImageStore(tmp_path / "store")
    (record,) = await store.load(getattr(tiny, fmt))
    assert record.name == "docker.io/library/tiny:v1"
    assert (record.rootfs / "srv" / "marker").read_text() == MARKER + "\n"
    assert (record.rootfs / "bin" / "sh").is_symlink()
    assert record.config.entrypoint == ("/bin/sh", "-c")
    assert record.config.working_dir == "/srv"
    assert "GREETING=from-image" in record.config.env
    for ref in ("tiny:v1", "docker.io/library/tiny:v1", f"tiny@{record.digest}"):
        assert store.lookup(ref) == record
    assert store.lookup("tiny") is None  # :latest was not loaded
    assert store.has_repository("tiny:other")
    assert not store.has_repository("busybox")


async def test_an_image_is_unpacked_once_and_kept_across_a_restart(
    tiny: TinyImage, tmp_path: Path
) -> None:
    store = ImageStore(tmp_path / "store")
    (first,) = await store.load(tiny.oci_archive)
    marker = first.rootfs / "srv" / "marker"
    before = os.stat(marker).st_ino
    (again,) = await store.load(tiny.oci_archive)
    assert again.rootfs == first.rootfs and os.stat(marker).st_ino == before
    reopened = ImageStore(tmp_path / "store")
    assert reopened.lookup("tiny:v1") == first


async def test_a_cache_keeps_unpacked_images_but_not_a_runs_names(
    tiny: TinyImage, tmp_path: Path
) -> None:
    (first,) = await ImageStore(tmp_path / "cache", keep_names=False).load(tiny.oci_archive)
    inode = os.stat(first.rootfs / "srv" / "marker").st_ino
    later = ImageStore(tmp_path / "cache", keep_names=False)
    assert later.lookup("tiny:v1") is None  # another run's names are its own
    (again,) = await later.load(tiny.oci_archive)
    assert again == first and os.stat(again.rootfs / "srv" / "marker").st_ino == inode
    assert not (tmp_path / "cache" / "images.json").exists()


async def test_a_hostile_layer_writes_only_inside_the_images_root(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    archive = oci_archive_of_layer(tmp_path, escape_layer(host), "example.com/evil:1")
    store = ImageStore(tmp_path / "store")
    (record,) = await store.load(archive)
    assert list(host.iterdir()) == []
    inside = record.rootfs / str(host).lstrip("/")
    assert sorted(p.name for p in inside.iterdir()) == [
        "absolute",
        "dotdot",
        "through-absolute-link",
        "through-relative-link",
    ]
    assert (record.rootfs / "hard").read_text() == "image's own"  # not the host's /etc/hostname


async def test_archive_members_outside_the_layout_are_never_written(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    extra = {
        f"../../../../../../{str(host).lstrip('/')}/dotdot": b"x",
        f"{host}/absolute": b"x",
        "blobs/sha256/../../../escape": b"x",
    }
    archive = oci_archive_of_layer(tmp_path, escape_layer(host), "example.com/evil:2", extra)
    await ImageStore(tmp_path / "store").load(archive)
    assert list(host.iterdir()) == []
    assert not (tmp_path / "escape").exists()


async def test_a_member_declaring_a_terabyte_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    archive = oci_archive_of_layer(tmp_path, huge_layer(), "example.com/huge:1")
    store = ImageStore(tmp_path / "store")
    with pytest.raises(ArchiveError, match=r"more than the .* bytes free|not a valid tar stream"):
        await store.load(archive)
    assert store.images() == []
    assert list((tmp_path / "store" / "unpacked").iterdir()) == []
    assert [p.name for p in (tmp_path / "store").iterdir()] == ["unpacked"]


async def test_not_an_archive_is_refused_with_its_name(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"not a tar at all" * 100)
    with pytest.raises(ArchiveError, match=r"junk\.tar: not a readable tar archive"):
        await ImageStore(tmp_path / "store").load(junk)


async def test_an_archive_without_names_is_refused(tmp_path: Path) -> None:
    archive = oci_archive_of_layer(tmp_path, escape_layer(tmp_path), "v1")  # a bare tag
    with pytest.raises(ArchiveError, match="no image in it has a name"):
        await ImageStore(tmp_path / "store").load(archive)


async def test_a_forged_index_never_names_a_directory_outside_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (tmp_path / "etc" / "rootfs").mkdir(parents=True)
    forged = {"images": {"docker.io/library/evil:1": {"digest": "../../etc"}}}
    (store / "images.json").write_text(json.dumps(forged))
    assert ImageStore(store).lookup("evil:1") is None


async def test_a_loaded_images_process_uses_its_own_passwd(tiny: TinyImage, tmp_path: Path) -> None:
    (record,) = await ImageStore(tmp_path / "store").load(tiny.oci_archive)
    named = ImageRecord(
        record.name, record.digest, record.rootfs, replace(record.config, user="app")
    )
    p = process_of({"env": []}, named, env=[("GREETING", "from-pod")], hostname="tiny-0")
    assert p.argv == ("/bin/sh", "-c", *record.config.cmd)
    assert (p.uid, p.gid, p.cwd) == (1000, 1000, "/srv")
    assert "GREETING=from-pod" in p.env and "HOSTNAME=tiny-0" in p.env
