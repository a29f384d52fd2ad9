"""`jobset sim` starts, as kind does, with one node unless `--nodes` says otherwise, and its
`--help` says so; `jobset dev` keeps its 4 pools of 4 nodes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubesim.process import start_sim

pytestmark = [pytest.mark.kubectl]

POD = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
"""


def _help(command: str) -> str:
    cmd = [sys.executable, "-m", "jobset.cli", command, "--help"]
    return " ".join(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split())


def test_sim_starts_with_one_node_that_runs_a_pod(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, "--time-scale", "0.05")
    try:
        names = sim.kubectl("get", "nodes", "-o", "name").stdout.split()
        assert names == ["node/pool-0-node-0"]
        sim.kubectl("apply", "-f", "-", input=POD)
        for _ in range(600):
            phase = sim.kubectl("get", "pod", "p", "-o", "jsonpath={.status.phase}").stdout
            if phase == "Running":
                break
            time.sleep(0.05)
        assert phase == "Running"
    finally:
        sim.stop()


def test_nodes_zero_starts_without_nodes(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, "--nodes", "0", "--sim-level", "none")
    try:
        assert sim.kubectl("get", "nodes", "-o", "name").stdout == ""
    finally:
        sim.stop()


def test_help_says_what_the_default_cluster_is() -> None:
    assert "starts with one node (pool-0-node-0)" in _help("sim")
    assert "starts with 4 node pools of 4 nodes (pools=4x4," in _help("dev")
