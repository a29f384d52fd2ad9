"""`jobset dev`: sim + CRD + controller in one command; a JobSet runs to completion."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.kubectl]

JOBSET_YAML = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: hello
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        backoffLimit: 0
        template:
          spec:
            containers:
            - name: w
              image: busybox
              command: ["sleep", "50s"]
"""


def test_dev_runs_a_jobset_to_completion(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobset.cli",
            "dev",
            "--kubeconfig",
            str(kubeconfig),
            "--time-scale",
            "0.02",
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "ready" in line or not line:
                break
        assert "jobset dev ready" in lines[-1], "".join(lines)
        env = {"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"}
        subprocess.run(
            ["kubectl", "apply", "-f", "-"],
            input=JOBSET_YAML,
            text=True,
            check=True,
            env=env,
            capture_output=True,
        )
        status: dict[str, object] = {}
        while time.monotonic() < deadline:
            out = subprocess.run(
                ["kubectl", "get", "jobset", "hello", "-o", "json"],
                text=True,
                check=True,
                env=env,
                capture_output=True,
            )
            status = json.loads(out.stdout).get("status") or {}
            if status.get("terminalState"):
                break
            time.sleep(0.2)
        assert status.get("terminalState") == "Completed", status
    finally:
        proc.terminate()
        proc.wait(timeout=30)
