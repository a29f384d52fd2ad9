"""tools/build_image.sh has debootstrap check the Debian archive's signatures.

The script runs for real (as root, as `make image` does) up to its debootstrap step; the
`debootstrap`, `buildah` and `runc` it finds first on PATH are stand-ins that record their
arguments, since the real ones would download Debian (the image tier, `make image-test`,
runs them).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def test_debootstrap_verifies_with_debians_keyring(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorded = tmp_path / "debootstrap.args"
    stubs = {
        "debootstrap": f'printf "%s\\n" "$@" > {recorded}; exit 1',
        "buildah": "exit 0",
        "runc": "exit 0",
    }
    for name, body in stubs.items():
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\n{body}\n")
        stub.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "JOBSET_IMAGE_CACHE": str(tmp_path / "cache"),
        "DEBIAN_MIRROR": "http://127.0.0.1:9/debian",
    }
    result = subprocess.run(
        ["bash", str(REPO / "tools" / "build_image.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0 and "debootstrap failed" in result.stderr, result.stderr
    args = recorded.read_text().splitlines()
    assert f"--keyring={KEYRING}" in args
    assert "--force-check-gpg" in args
    assert Path(KEYRING).stat().st_size > 0
