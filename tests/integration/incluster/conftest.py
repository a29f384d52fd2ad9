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

import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import helm_python as helm
import pytest
import yaml

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


def sim_flags(controller_bin: Path, *more: str) -> tuple[str, ...]:
    """The flags of every in-cluster test's `jobset sim`: pods, 4 node pools of 2, the
    chart's image repository mapped to `controller_bin`, then `more`."""
    return (
        "--sim-level",
        "pods",
        "--time-scale",
        "0.05",
        "--nodes",
        NODES,
        "--run-image",
        f"{IMAGE}={controller_bin}",
        *more,
    )


@pytest.fixture(scope="package")
def cluster(controller_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("incluster")
    sim = start_sim(tmp, *sim_flags(controller_bin), timeout=120)
    try:
        yield Cluster(
            sim, controller_bin, helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace=NS)
        )
    finally:
        sim.stop()


# Helpers of the modules that install and remove the controller themselves (kustomize,
# cert-manager, drain, Prometheus). Each module runs alone on the package's cluster: it
# works in a namespace of its own and leaves no object, webhook or process behind.

THIRDPARTY_CRDS = REPO / "tests" / "integration" / "deploy" / "data" / "thirdparty-crds.yaml"
WEBHOOK_CONFIGURATIONS = (
    ("validatingwebhookconfiguration", "jobset-validating-webhook-configuration"),
    ("mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration"),
)
DENIED = "job names generated for this JobSet will exceed 63 characters"


def jobset_manifest(
    name: str, namespace: str, sleep: str = "2s", replicas: int = 2, **pod_spec: Any
) -> str:
    """A JobSet of `replicas` one-pod Jobs sleeping `sleep` (simulated time)."""
    return json.dumps(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "workers",
                        "replicas": replicas,
                        "template": {
                            "spec": {
                                "template": {
                                    "spec": {
                                        "restartPolicy": "Never",
                                        "containers": [
                                            {
                                                "name": "main",
                                                "image": "busybox",
                                                "command": ["sleep", sleep],
                                            }
                                        ],
                                        **pod_spec,
                                    }
                                }
                            }
                        },
                    }
                ]
            },
        }
    )


def finished(cluster: Cluster, name: str, namespace: str) -> dict[str, Any]:
    """The JobSet once it has a terminal state."""

    def done() -> dict[str, Any] | None:
        js: dict[str, Any] = cluster.json("get", "jobset", name, "-n", namespace)
        return js if (js.get("status") or {}).get("terminalState") else None

    return eventually(done, 180, f"JobSet {namespace}/{name} to finish")


def example_reaches_its_outcome(cluster: Cluster, file: str, namespace: str) -> None:
    """examples/FILE, applied with kubectl, reaches the outcome its header states."""
    from jobset.dev.examplekit import load_example, observe, unmet

    example = load_example(REPO / "examples" / file)
    cluster.kubectl(*example.apply_args(), "-n", namespace)

    def met() -> bool:
        seen = observe(cluster.kubectl, namespace, example.name, example.expect)
        return not unmet(example.expect, seen)

    eventually(met, 180, f"{file}: {example.expect}")


def invalid_jobset_is_denied(cluster: Cluster, namespace: str) -> None:
    """A JobSet only the validating webhook can refuse (the CRD schema cannot count name
    lengths) is refused: the API server reached a controller pod through the webhook
    Service, and that pod served the certificate the configuration's caBundle trusts."""
    name = "a" * 56
    out = cluster.sim.kubectl(
        "apply", "-f", "-", input=jobset_manifest(name, namespace), check=False
    )
    assert out.returncode != 0 and DENIED in out.stderr, (out.stdout, out.stderr)
    assert cluster.sim.kubectl("get", "jobset", name, "-n", namespace, check=False).returncode


@contextlib.contextmanager
def namespace(cluster: Cluster, name: str) -> Iterator[str]:
    """A namespace for a module's JobSets, deleted (with what is in it) afterwards."""
    cluster.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=false")
        gone(cluster, "namespace", name)


def gone(cluster: Cluster, *what: str, within: float = 120) -> None:
    """`kubectl get WHAT` finds nothing (any more)."""
    eventually(
        lambda: cluster.sim.kubectl("get", *what, check=False).returncode != 0 or None,
        within,
        f"{' '.join(what)} to be gone",
    )


@contextlib.contextmanager
def thirdparty_crds(cluster: Cluster) -> Iterator[None]:
    """The Prometheus Operator's and cert-manager's CRDs (as far as the chart and config/
    use them); the ones that were not there before are removed afterwards."""
    wanted = [d["metadata"]["name"] for d in yaml.safe_load_all(THIRDPARTY_CRDS.read_text()) if d]
    present = {c["metadata"]["name"] for c in cluster.json("get", "crd")["items"]} & set(wanted)
    cluster.kubectl("apply", "--server-side", "-f", str(THIRDPARTY_CRDS))
    for crd in wanted:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{crd}")
    try:
        yield
    finally:
        for crd in set(wanted) - present:
            cluster.kubectl("delete", "crd", crd, "--ignore-not-found")


def bridge_of(sim: SimProcess) -> str:
    """`ksim<N>`, the bridge of `sim`: the state directory whose owner file names its pid
    (kubesim.kubelet.network). Other simulators - another test worker's - have their own."""
    for owner in Path("/run/kubesim").glob("ksim*/owner"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(owner.read_text().split()[0]) == sim.proc.pid:
                return owner.parent.name
    raise AssertionError(f"no bridge of the simulator (pid {sim.proc.pid}) in /run/kubesim")


def pod_netns(bridge: str) -> list[str]:
    """The network namespaces the simulator with `bridge` made for pods
    (`ksim<N>-<pod uid>`)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    names = (line.split()[0] for line in out.stdout.splitlines() if line.strip())
    return [name for name in names if name.startswith(f"{bridge}-")]


def no_controller_left(cluster: Cluster) -> None:
    """Every controller process has ended, and every pod network namespace of this
    cluster is gone."""
    bridge = bridge_of(cluster.sim)
    eventually(lambda: not cluster.controller_processes() or None, 120, "no controller process")
    eventually(lambda: not pod_netns(bridge) or None, 60, "no pod network namespace")
    time.sleep(0.5)
    assert cluster.controller_processes() == []


def current_leader(cluster: Cluster, within: float = 60) -> str:
    """The lease holder, once it is one of the controller pods that run now (a Lease left by
    an earlier install names a pod that is gone until it expires and is taken over)."""

    def holder() -> str | None:
        name = cluster.leader()
        return name if name in {p["metadata"]["name"] for p in cluster.controller_pods()} else None

    return eventually(holder, within, "a lease holder among the controller pods")


def uninstall(cluster: Cluster) -> None:
    """`helm uninstall`, every controller process ended, and the controller's Lease, which
    is no object of the release (Helm leaves it, as it leaves the namespace), deleted so
    that the next install starts from nothing."""
    cluster.helm.uninstall(RELEASE, timeout=120)
    no_controller_left(cluster)
    cluster.kubectl("delete", "lease", LEASE, "-n", NS, "--ignore-not-found")
