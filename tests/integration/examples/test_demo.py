"""`make demo` without a terminal (CI): it runs its examples to the end, prints their
final states, stops the cluster, says which command keeps it, and exits 0, leaving no
file behind. `make demo-train` tells the run from its pods' own logs: the failure, the
restart and the resumed step."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from jobset.dev.examplekit import train_bin


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
    # The cluster is stopped: no kubectl hint pointing at it, but how to keep it.
    assert "export KUBECONFIG" not in out
    assert "kubectl get jobsets" in out
    assert "run `python -m jobset.dev.demo` in a terminal to keep it" in out
    assert "make demo`" not in out
    # and the cluster is gone: nothing listens on its port any more
    url = re.search(r"jobset dev ready: https://127\.0\.0\.1:(\d+)", out)
    assert url is not None, out
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", int(url.group(1)))) != 0


def _demo(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobset.dev.demo", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def test_demo_leaves_no_temporary_file(tmp_path: Path) -> None:
    """Its kubeconfig and followed logs go to a temporary directory, removed at the end:
    nothing is left pointing at a stopped server."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "JOBSET_DEMO_TIME_SCALE": "0.05"}
    env.pop("JOBSET_DEMO_DIR", None)
    result = _demo(["simple.yaml"], env, 180)
    assert result.returncode == 0, result.stdout + result.stderr
    ready = re.search(r"kubeconfig (\S+?)[,)]", result.stdout)
    assert ready is not None and ready.group(1).startswith(str(tmp)), result.stdout
    assert list(tmp.iterdir()) == []


def test_demo_train_tells_the_failure_restart_and_resumed_step_from_pod_logs(
    tmp_path: Path,
) -> None:
    """The real JAX run of examples/jax-train (real processes: needs root and the training
    venv, `make train-venv`), as `make demo-train` runs it."""
    env = {**os.environ, "JOBSET_DEMO_DIR": str(tmp_path), "JOBSET_DEMO_COMMAND": "make demo-train"}
    env.setdefault("JOBSET_TRAIN_BIN", train_bin())
    result = _demo(["jax-train"], env, 420)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    told = out.split("What the pods of jax-train printed", 1)[1]
    first, _, second = told.partition("restart attempt 1 (after a JobSet restart):")
    assert "restart attempt 0:" in first
    # The failure, from the failed pod's own log (its pod was deleted by the restart).
    assert re.search(
        r"\(pod 1[,)].*\n( {6}.*\n)*? {6}rank 1: injected failure at step 1050", first
    ), told
    # The resumed step, from the new attempt's rank 0.
    assert re.search(r"\(pod 0\):\n\s+resumed-from-step=1000\b", second), told
    assert "run `make demo-train` in a terminal to keep it" in out
