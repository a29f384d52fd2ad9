"""`make demo` without a terminal (CI): it runs its examples to the end, prints their
final states and how to use the cluster, stops the cluster and exits 0."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path


def test_demo_runs_non_interactively_and_exits_zero(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "JOBSET_DEMO_TIME_SCALE": "0.05",
        "JOBSET_DEMO_DIR": str(tmp_path),
        "JOBSET_DEMO_TIMEOUT": "150",
    }
    env.pop("JOBSET_DEMO_EXIT", None)  # stdin not being a terminal must be enough
    result = subprocess.run(
        [sys.executable, "-m", "jobset.dev.demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "\x1b[" not in out  # plain text, no cursor movement
    final = out.split("Final states:", 1)[1]
    for name, state in (
        ("multislice", "Completed"),
        ("ignore-max-restarts", "Completed"),
        ("depends-on", "Completed"),
    ):
        line = next(ln for ln in final.splitlines() if ln.strip().startswith(name + " "))
        assert state in line and "-> as expected" in line, line
    assert "restarts=3" in final
    # the live table showed the Jobs' node pools while they ran
    assert re.search(r"^multislice\s+\w+\s+0\s+slice\s.*0:pool-\d 1:pool-\d", out, re.M), out
    assert f"export KUBECONFIG={tmp_path / 'kubeconfig'}" in out
    assert "kubectl get jobsets" in out
    # and the cluster is gone: nothing listens on its port any more
    url = re.search(r"jobset dev ready: https://127\.0\.0\.1:(\d+)", out)
    assert url is not None, out
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", int(url.group(1)))) != 0
