"""`make demo`: start the simulated cluster and show kubectl using it.

Until the JobSet controller lands, the demo runs an Indexed Job across simulated node
pools, so a new user sees the cluster schedule, run and complete real workloads, and
learns how to point kubectl at it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jobset.sim.process import start_sim

DEMO_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: demo-indexed
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: worker
        image: busybox
        command: ["bash", "-c", "echo hello from $JOB_COMPLETION_INDEX; sleep 30s; exit 0"]
"""

NODES = "pools=4x2,label=cloud.google.com/gke-nodepool"


def _kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    result = subprocess.run(
        ["kubectl", *args], input=input, capture_output=True, text=True, env=env, timeout=60
    )
    return result.stdout + result.stderr


def _show(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    print(f"\n$ kubectl {' '.join(args)}", flush=True)
    out = _kubectl(kubeconfig, *args, input=input)
    print(out.rstrip(), flush=True)
    return out


def main() -> int:
    if shutil.which("kubectl") is None:
        print("kubectl is not on PATH; the demo needs it to show the cluster", file=sys.stderr)
        return 1
    workdir = Path(os.environ.get("JOBSET_DEMO_DIR") or tempfile.mkdtemp(prefix="jobset-demo-"))
    print(f"Starting the simulated cluster (nodes: {NODES}) ...", flush=True)
    try:
        sim = start_sim(workdir, "--nodes", NODES, "--time-scale", "0.1")
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"  {sim.output[-1].rstrip()}", flush=True)
    try:
        kubeconfig = sim.kubeconfig
        _show(kubeconfig, "cluster-info")
        _show(kubeconfig, "get", "nodes", "-L", "cloud.google.com/gke-nodepool")
        _show(kubeconfig, "apply", "-f", "-", input=DEMO_JOB)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = _kubectl(
                kubeconfig,
                "get",
                "job",
                "demo-indexed",
                "-o",
                "jsonpath={.status.conditions[?(@.type=='Complete')].status}",
            )
            if status.strip() == "True":
                break
            time.sleep(1)
        _show(kubeconfig, "get", "pods", "-o", "wide")
        _show(kubeconfig, "get", "job", "demo-indexed")
        pod = _kubectl(
            kubeconfig,
            "get",
            "pods",
            "-l",
            "batch.kubernetes.io/job-completion-index=2",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ).strip()
        if pod:
            _show(kubeconfig, "logs", pod)
        print(
            "\nThe cluster is still running. In another terminal:\n"
            f"  export KUBECONFIG={kubeconfig}\n"
            "  kubectl get jobs,pods -o wide\n"
            "Press Ctrl-C here to stop it.",
            flush=True,
        )
        if os.environ.get("JOBSET_DEMO_EXIT") or not sys.stdin.isatty():
            return 0
        sim.proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
