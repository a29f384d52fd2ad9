"""The production install, executed: the chart's controller running as pods in `jobset sim`.

The controller is the package a user installs: a wheel built from the image's build context
(tests/wheel.py), in a fresh venv outside the checkout, without the `[sim]` extra, as the
image has it. `jobset sim --run-image ghcr.io/jobset-py/jobset=<venv>/bin` makes every
container of the chart's image repository a real process running the chart's own command
(`jobset controller` with the chart's args), in its own network namespace, as uid 65532
with a read-only root, with the in-cluster config and a ServiceAccount token under the
chart's RBAC, behind its probes, serving the webhooks the API server calls through the
webhook Service. Nothing of this test's process is in that path.

Needs root (network and mount namespaces), as the real-process runtime does.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import helm_python as helm
import pytest

from kubesim.process import SimProcess, start_sim
from tests.wheel import REPO, build_wheel, install

IMAGE = "ghcr.io/jobset-py/jobset"  # the chart's default image repository
NS = "jobset-system"
RELEASE = "jobset"
CHART = REPO / "charts" / "jobset"
DEPLOYMENT = "jobset-controller-manager"
LEASE = "jobset-controller-leader"
NODES = "pools=4x2,label=cloud.google.com/gke-nodepool"
# Short leader-election timings so that takeovers fit a test; the chart passes them as flags.
LEADER_ELECTION = {"leaseDuration": 6, "renewDeadline": 4, "retryPeriod": 1}

T = TypeVar("T")


def eventually(check: Callable[[], T | None], within: float, what: str) -> T:
    deadline = time.monotonic() + within
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"timed out after {within:g}s waiting for {what} (last: {last!r})")


def system_python() -> Path:
    """The machine's Python 3.11, which the image's venv is made from as well.

    Not this test's interpreter: a venv links to the interpreter it was made by, and a
    per-user installation (pyenv under /root) is unreadable to the pods' uid 65532.
    """
    for candidate in (Path("/usr/bin/python3.11"), Path("/usr/local/bin/python3.11")):
        if candidate.exists():
            return candidate
    raise AssertionError("the in-cluster tests need a system python3.11 with venv (python3-venv)")


@pytest.fixture(scope="package")
def controller_bin() -> Iterator[Path]:
    """`bin/` of a venv holding only the installed wheel (what the image holds).

    In a world-readable directory: the pods run as uid 65532, which must be able to read
    the interpreter's libraries (pytest's own temporary directories are private to root).
    """
    # Not under /tmp: the chart mounts an emptyDir there, which hides the host's /tmp (the
    # image keeps its venv in /opt/jobset for the same reason).
    top = Path(tempfile.mkdtemp(prefix="jobset-image-", dir="/var/tmp"))
    try:
        top.chmod(0o755)  # mkdtemp makes it 0700; what pip writes below is world-readable
        venv = install(top / "venv", build_wheel(top), python=system_python())
        yield venv / "bin"
    finally:
        shutil.rmtree(top, ignore_errors=True)


@dataclass
class Cluster:
    """The simulated cluster with the controller image mapped, and the chart's release."""

    sim: SimProcess
    bin: Path
    helm: helm.Config

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 60
    ) -> str:
        out = self.sim.kubectl(*args, check=check, input=input, timeout=timeout)
        return str(out.stdout)

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json"))

    def install(self, values: dict[str, Any]) -> Any:
        return self.helm.install(
            CHART, RELEASE, values, namespace=NS, create_namespace=True, timeout=120
        )

    def upgrade(self, values: dict[str, Any]) -> Any:
        return self.helm.upgrade(CHART, RELEASE, values, namespace=NS, timeout=120)

    def rollout(self, within: int = 240) -> None:
        """`kubectl rollout status` of the controller Deployment succeeds."""
        self.kubectl(
            "rollout",
            "status",
            f"deployment/{DEPLOYMENT}",
            "-n",
            NS,
            f"--timeout={within}s",
            timeout=within + 30,
        )

    def controller_pods(self) -> list[dict[str, Any]]:
        pods = self.json("get", "pods", "-n", NS, "-l", "control-plane=controller-manager")
        return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]

    def ready_pods(self) -> list[str]:
        return sorted(
            p["metadata"]["name"]
            for p in self.controller_pods()
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (p.get("status") or {}).get("conditions") or []
            )
        )

    def leader(self) -> str:
        """The pod whose controller holds the lease (client-go identity: hostname_uuid)."""
        lease = self.json("get", "lease", LEASE, "-n", NS)
        return str(lease["spec"].get("holderIdentity") or "").split("_")[0]

    def controller_processes(self) -> list[tuple[int, int, str]]:
        """(pid, uid, cmdline) of every live `jobset controller` process of the image."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
                status = (proc / "status").read_text()
            except OSError:
                continue
            words = [w.decode(errors="replace") for w in cmdline if w]
            if len(words) >= 3 and words[1].startswith(str(self.bin)) and "controller" in words:
                uid = int(
                    next(ln for ln in status.splitlines() if ln.startswith("Uid:")).split()[1]
                )
                found.append((int(proc.name), uid, " ".join(words)))
        return found

    def requests(self, verb: str, resource: str) -> int:
        """How many `verb` requests on `resource` the API server has served."""
        counts = json.loads(self.kubectl("get", "--raw", "/debug/requests"))["requests"]
        return sum(r["count"] for r in counts if r["verb"] == verb and r["resource"] == resource)


@pytest.fixture(scope="package")
def cluster(controller_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("incluster")
    sim = start_sim(
        tmp,
        "--sim-level",
        "pods",
        "--time-scale",
        "0.05",
        "--nodes",
        NODES,
        "--run-image",
        f"{IMAGE}={controller_bin}",
        timeout=120,
    )
    try:
        yield Cluster(
            sim, controller_bin, helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace=NS)
        )
    finally:
        sim.stop()
