"""`jobset sim --data-dir` keeps its state private (0600 files, 0700 directories) and refuses
existing state that another user owns or that others may write to, with a clear line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kubesim.process import start_sim

NOBODY = 65534


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _run_once(tmp: Path, data: Path) -> None:
    sim = start_sim(tmp, "--sim-level", "none", "--data-dir", str(data))
    sim.kubectl("create", "secret", "generic", "s", "--from-literal=k=v")
    assert sim.stop() == 0


def _refused(tmp: Path, data: Path) -> str:
    cmd = [sys.executable, "-m", "jobset.cli", "sim", "--sim-level", "none"]
    cmd += ["--kubeconfig", str(tmp / "kc2"), "--data-dir", str(data)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    return result.stderr


def test_state_is_written_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    _run_once(tmp_path, data)
    assert _mode(data) == 0o700
    assert _mode(data / "pki") == 0o700
    for name in ("snapshot.json", "journal.jsonl", "pki/ca.key", "pki/ca.crt", "pki/token"):
        assert _mode(data / name) == 0o600, name


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            lambda d: os.chown(d / "pki", NOBODY, NOBODY),
            f"pki: owned by uid {NOBODY}, not by this user",
            id="pki-of-another-user",
        ),
        pytest.param(
            lambda d: os.chown(d / "pki" / "ca.key", NOBODY, -1),
            f"ca.key: owned by uid {NOBODY}",
            id="ca-key-of-another-user",
        ),
        pytest.param(
            lambda d: os.chmod(d / "snapshot.json", 0o666),
            "snapshot.json: group or others may write to it (mode 0666)",
            id="world-writable-snapshot",
        ),
        pytest.param(
            lambda d: os.chmod(d, 0o775),
            "data: group or others may write to it (mode 0775)",
            id="group-writable-dir",
        ),
    ],
)
def test_untrusted_state_is_refused(tmp_path: Path, change: object, expected: str) -> None:
    data = tmp_path / "data"
    _run_once(tmp_path, data)
    assert callable(change)
    change(data)
    stderr = _refused(tmp_path, data)
    assert "jobset sim: refusing " in stderr
    assert expected in stderr
