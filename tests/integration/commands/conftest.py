"""A `jobset sim --sim-level none` with the JobSet CRD (no controller: tests write JobSet
status through `/status` themselves), a pods-level one (`sim_pods`), `jobset dev` (`dev`: the
real controller), and the user commands run as a real process."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobset.sdk import JobSetClient
from kubesim.process import SimProcess, start_sim
from tests.sims import install_jobset_crd, start_sim_none

_ns = itertools.count()


@dataclass
class Cli:
    """Runs `python -m jobset.cli ARGS` against one cluster and namespace."""

    kubeconfig: Path
    namespace: str

    def run(
        self, *args: str, input: str | None = None, timeout: float = 60, namespaced: bool = True
    ) -> subprocess.CompletedProcess[str]:
        ns = ["-n", self.namespace] if namespaced else []
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "COLUMNS": "200"}
        return subprocess.run(
            [sys.executable, "-m", "jobset.cli", *args, *ns],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        return subprocess.Popen(
            [sys.executable, "-m", "jobset.cli", *args, "-n", self.namespace],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )


@pytest.fixture(scope="module")
def sim_none(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim_none(tmp_path_factory.mktemp("sim"), jobset_crd=True)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def sim_pods(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """A pods-level cluster (Job controller, scheduler, kubelet; 2 pools x 2 nodes) with the
    JobSet CRD and no JobSet controller: tests create the child Jobs themselves."""
    s = start_sim(tmp_path_factory.mktemp("sim"), "--sim-level", "pods", "--time-scale", "0.05",
                  "--nodes", "pools=2x2")  # fmt: skip
    try:
        install_jobset_crd(s)
    except BaseException:
        s.stop()
        raise
    yield s
    s.stop()


@pytest.fixture
def namespace(sim_none: SimProcess) -> str:
    ns = f"u{next(_ns)}"
    sim_none.kubectl("create", "namespace", ns)
    return ns


@pytest.fixture
def cli(sim_none: SimProcess, namespace: str) -> Cli:
    return Cli(sim_none.kubeconfig, namespace)


@pytest.fixture
async def sdk(sim_none: SimProcess, namespace: str) -> AsyncIterator[JobSetClient]:
    client = await JobSetClient.connect(str(sim_none.kubeconfig), namespace=namespace)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`jobset dev` (sim + CRD + controller) on a free port; yields its kubeconfig."""
    kubeconfig = tmp_path_factory.mktemp("dev") / "kubeconfig"
    cmd = [
        sys.executable, "-m", "jobset.cli", "dev", "--port", "0", "--kubeconfig", str(kubeconfig),
        "--time-scale", "0.02", "--nodes", "pools=4x2,label=cloud.google.com/gke-nodepool",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    output: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        output.append(line)
        if "ready" in line:
            break
    else:
        proc.kill()
    if proc.poll() is not None:
        raise RuntimeError("jobset dev did not start:\n" + "".join(output))

    def drain() -> None:
        output.extend(proc.stdout or [])

    threading.Thread(target=drain, daemon=True).start()
    yield kubeconfig
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
async def dev_sdk(dev: Path) -> AsyncIterator[JobSetClient]:
    client = await JobSetClient.connect(str(dev), namespace="default")
    try:
        yield client
    finally:
        await client.close()
