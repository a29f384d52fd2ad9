"""Files of an image's root are read inside it: links never lead to the host."""

from __future__ import annotations

import os
from pathlib import Path

from kubesim.images.rootfiles import read_in_root


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "rootfs"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "passwd").write_text("app:x:1000:1000::/:/bin/sh\n")
    (root / "etc" / "shadow").write_text("image-shadow\n")
    return root


def test_reads_the_images_file(tmp_path: Path) -> None:
    assert read_in_root(_root(tmp_path), "/etc/passwd") == "app:x:1000:1000::/:/bin/sh\n"


def test_absolute_link_is_followed_inside_the_root(tmp_path: Path) -> None:
    root = _root(tmp_path)
    host = tmp_path / "host-secret"
    host.write_text("HOST\n")
    os.remove(root / "etc" / "passwd")
    os.symlink(str(host), root / "etc" / "passwd")  # on the host this would be the secret
    assert read_in_root(root, "/etc/passwd") is None
    os.remove(root / "etc" / "passwd")
    os.symlink("/etc/shadow", root / "etc" / "passwd")
    assert read_in_root(root, "/etc/passwd") == "image-shadow\n"


def test_dot_dot_stops_at_the_root(tmp_path: Path) -> None:
    root = _root(tmp_path)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("HOST\n")
    os.remove(root / "etc" / "passwd")
    os.symlink("../../../../etc/shadow", root / "etc" / "passwd")
    assert read_in_root(root, "/etc/passwd") == "image-shadow\n"
    assert read_in_root(root, "/../../etc/passwd") == "image-shadow\n"


def test_link_loops_and_non_files_read_nothing(tmp_path: Path) -> None:
    root = _root(tmp_path)
    os.symlink("loop", root / "loop")
    assert read_in_root(root, "/loop") is None
    assert read_in_root(root, "/etc") is None
