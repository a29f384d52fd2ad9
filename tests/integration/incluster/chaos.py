"""Chaos against the deployed controller: the faults, the seeded schedule, the checks.

The controller is the chart's Deployment (2 replicas, leader election) running as real
processes in `jobset sim --run-image`, as in the rest of this package. The simulated
cluster runs with `--data-dir`, so it can be restarted; its journal (every change the
store made, in order, `kubesim.apiserver.core.persistence`) is the record the invariants are
checked on, as the reliability suite checks them on the store's change stream: it is
written by the server itself, so no event is missed the way a client's watch would miss
one across a restart.

The faults, each aimed at the current leader (the standby is left alone unless said):

- `delete-leader-pod`: `kubectl delete pod` of the leader (graceful: the lease is released);
- `sigkill`: SIGKILL of the leader's controller process, and by the seed's choice also the
  standby's (the container restarts in its pod; the lease is left to expire);
- `drain`: `kubectl drain` of the leader's node for the controller's pods (the eviction
  API under the chart's PodDisruptionBudget), then `kubectl uncordon`;
- `network-cut`: the leader's pod cannot reach the API server (an iptables DROP in its
  network namespace, only for the API server's address and port) while the standby's
  network stays up; restored once a new leader holds the lease;
- `apiserver-restart`: `jobset sim` stopped and started again on the same port with the
  same `--data-dir`. In the simulator the API server, the kubelets and the cluster's
  controllers are one process, so this also restarts every pod (the controller's too):
  a whole control plane and its nodes coming back, which includes the API server restart.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import helm_python as helm

from kubesim.apiserver.core.store import WatchEvent
from kubesim.process import SimProcess, start_sim
from tests.integration.incluster.conftest import (
    LEASE,
    NS,
    Cluster,
    eventually,
    sim_flags,
)
from tests.integration.reliability.harness import (
    Expected,
    Invariants,
    outcome,
    workload,
)

FAULTS = ("delete-leader-pod", "sigkill", "drain", "network-cut", "apiserver-restart")
CHAOS_NS = "chaos"
KINDS = ("ok", "restarts", "fails")


def schedule(seed: int, rounds: int) -> list[str]:
    """`rounds` faults: every kind once per len(FAULTS) rounds, each block shuffled by `seed`."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < rounds:
        block = list(FAULTS)
        rng.shuffle(block)
        out += block
    return out[:rounds]


def parse_micro_time(value: str) -> float:
    """A Lease's MicroTime (`2026-12-03T10:00:00.123456Z`) as a Unix timestamp."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def percentile_50(values: Iterable[float]) -> float:
    return float(statistics.median(list(values)))


# ------------------------------------------------------------------ the cluster


@dataclass
class ChaosCluster:
    """The package's Cluster on a `jobset sim --data-dir` that can be restarted in place."""

    cluster: Cluster
    tmp: Path
    port: int
    flags: tuple[str, ...]
    journals: list[Path] = field(default_factory=list)

    @classmethod
    def start(cls, tmp: Path, controller_bin: Path, port: int) -> ChaosCluster:
        flags = sim_flags(controller_bin, "--data-dir", str(tmp / "data"))
        sim = start_sim(tmp, *flags, port=port, timeout=120)
        config = helm.Config(kubeconfig_path=str(sim.kubeconfig), namespace=NS)
        return cls(Cluster(sim, controller_bin, config), tmp, port, flags)

    @property
    def sim(self) -> SimProcess:
        return self.cluster.sim

    def restart(self) -> None:
        """Stop `jobset sim` (SIGTERM: the journal is flushed) and start it again on the
        same port and data directory; the kubeconfig (same CA and token) stays valid."""
        self.sim.stop()
        kept = self.tmp / f"journal-{len(self.journals)}.jsonl"
        shutil.copy(self.tmp / "data" / "journal.jsonl", kept)
        self.journals.append(kept)
        self.cluster.sim = start_sim(self.tmp, *self.flags, port=self.port, timeout=120)

    def stop(self) -> None:
        self.sim.stop()

    def journal_events(self) -> Iterator[tuple[tuple[str, str], WatchEvent]]:
        """Every change the server journaled, over every run so far, in order."""
        for path in [*self.journals, self.tmp / "data" / "journal.jsonl"]:
            with path.open("rb") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        break  # the running server's last line may be half written
                    obj = entry["o"]
                    rv = int(obj["metadata"].get("resourceVersion") or 0)
                    yield (entry["g"], entry["r"]), WatchEvent(entry["t"], obj, rv)

    def invariants(self) -> Invariants:
        inv = Invariants()
        for rkey, ev in self.journal_events():
            inv(rkey, ev)
        return inv


# ------------------------------------------------------------------ the controller's state


def lease(cluster: Cluster) -> dict[str, Any]:
    spec: dict[str, Any] = cluster.json("get", "lease", LEASE, "-n", NS)["spec"]
    return spec


def pod_of(pid: int) -> str:
    """The pod a process runs in: its HOSTNAME is the pod's name, as in Kubernetes."""
    for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if entry.startswith(b"HOSTNAME="):
            return entry.split(b"=", 1)[1].decode()
    return ""


def process_env(pid: int, name: str) -> str:
    for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        key, _, value = entry.partition(b"=")
        if key.decode() == name:
            return value.decode()
    raise AssertionError(f"process {pid} has no {name}")


def processes_by_pod(cluster: Cluster) -> dict[str, int]:
    out: dict[str, int] = {}
    for pid, _, _ in cluster.controller_processes():
        try:
            out[pod_of(pid)] = pid
        except OSError:
            continue  # ended meanwhile
    return out


def settled(cluster: Cluster, within: float = 240) -> str:
    """Two ready controller pods, each with its process, and a lease holder among them
    whose lease is fresh; returns the holder's identity."""

    def check() -> str | None:
        ready = cluster.ready_pods()
        if len(ready) != 2 or set(processes_by_pod(cluster)) != set(ready):
            return None
        spec = lease(cluster)
        holder = str(spec.get("holderIdentity") or "")
        renewed = parse_micro_time(str(spec.get("renewTime") or "1970-01-01T00:00:00Z"))
        fresh = time.time() - renewed < float(spec.get("leaseDurationSeconds") or 0)
        return holder if holder.split("_")[0] in ready and fresh else None

    return eventually(check, within, "two ready controller pods and a leader among them")


def taken_over(
    cluster: Cluster, before: str, since: float, not_before: float = 0.0, within: float = 180
) -> float:
    """Seconds from `since` (a Unix time) until a holder other than `before` acquired the
    lease (its acquireTime, written by the new leader) at `not_before` or later."""

    def check() -> float | None:
        try:
            spec = lease(cluster)
        except AssertionError:
            return None  # the API server is away (restarting)
        holder = str(spec.get("holderIdentity") or "")
        if not holder or holder == before:
            return None
        acquired = parse_micro_time(str(spec["acquireTime"]))
        return acquired - since if acquired >= not_before else None

    return eventually(check, within, f"a leader other than {before}")


# ------------------------------------------------------------------ the faults


class Faults:
    """The fault actions; each returns the seconds the lease took to move to another holder."""

    def __init__(self, chaos: ChaosCluster, rng: random.Random) -> None:
        self.chaos = chaos
        self.rng = rng

    @property
    def cluster(self) -> Cluster:
        return self.chaos.cluster

    def run(self, fault: str) -> float:
        holder = settled(self.cluster)
        leader = holder.split("_")[0]
        action = getattr(self, fault.replace("-", "_"))
        took: float = action(holder, leader)
        settled(self.cluster)
        return took

    def delete_leader_pod(self, holder: str, leader: str) -> float:
        t0 = time.time()
        self.cluster.kubectl("delete", "pod", leader, "-n", NS, "--wait=false")
        return taken_over(self.cluster, holder, t0)

    def sigkill(self, holder: str, leader: str) -> float:
        procs = processes_by_pod(self.cluster)
        victims = [leader]
        if self.rng.random() < 0.3:
            victims = list(procs)  # both replicas at once
        t0 = time.time()
        for pod in victims:
            os.kill(procs[pod], signal.SIGKILL)
        return taken_over(self.cluster, holder, t0)

    def drain(self, holder: str, leader: str) -> float:
        pods = {p["metadata"]["name"]: p for p in self.cluster.controller_pods()}
        node = pods[leader]["spec"]["nodeName"]
        t0 = time.time()
        try:
            out = self.cluster.kubectl(
                "drain",
                node,
                "--pod-selector=control-plane=controller-manager",
                "--ignore-daemonsets",
                "--delete-emptydir-data",
                "--timeout=240s",
                timeout=270,
            )
            assert f"pod/{leader} evicted" in out, out
            took = taken_over(self.cluster, holder, t0)
        finally:
            self.cluster.kubectl("uncordon", node)
        return took

    def network_cut(self, holder: str, leader: str) -> float:
        pid = processes_by_pod(self.cluster)[leader]
        rule = [
            "OUTPUT",
            "-p",
            "tcp",
            "-d",
            process_env(pid, "KUBERNETES_SERVICE_HOST"),
            "--dport",
            process_env(pid, "KUBERNETES_SERVICE_PORT"),
            "-j",
            "DROP",
        ]
        netns = subprocess.run(
            ["ip", "netns", "identify", str(pid)], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert netns.startswith("ksim"), netns
        iptables = ["ip", "netns", "exec", netns, "iptables", "-w"]
        t0 = time.time()
        subprocess.run([*iptables, "-I", *rule], check=True)
        try:
            took = taken_over(self.cluster, holder, t0)
            time.sleep(2)  # the cut leader stays cut a while after losing the lease
        finally:
            subprocess.run([*iptables, "-D", *rule], check=True)
        return took

    def apiserver_restart(self, holder: str, leader: str) -> float:
        """Until a replica of the restarted cluster leads: the standby may take the released
        lease in the second it outlives the leader while the simulator stops, which is no
        recovery (it is stopped next), so only a lease acquired after the restart counts."""
        t0 = time.time()
        self.chaos.restart()
        return taken_over(self.cluster, holder, t0, not_before=time.time())


# ------------------------------------------------------------------ the workload


def submit(cluster: Cluster, obj: dict[str, Any], within: float = 180) -> None:
    """`kubectl create` of a JobSet, retried while the webhooks or the API server are away
    (the faults make them so); an AlreadyExists from a retry whose first try got through
    is success."""
    deadline = time.monotonic() + within
    while True:
        out = cluster.sim.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
        if out.returncode == 0 or "AlreadyExists" in out.stderr:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"cannot create {obj['metadata']['name']}: {out.stderr}")
        time.sleep(1)


def jobsets(rng: random.Random, first: int, count: int) -> list[tuple[dict[str, Any], Expected]]:
    """`count` JobSets of mixed kinds (reliability's workload), numbered from `first`; the
    ones that succeed run 5-25 s of wall time (100-500 s simulated at --time-scale 0.05)."""
    out = []
    for i in range(first, first + count):
        kind = KINDS[i % len(KINDS)]
        out.append(workload(f"{kind}-{i}", kind, CHAOS_NS, run_seconds=rng.uniform(100, 500)))
    return out


def outcomes(cluster: Cluster) -> dict[str, Expected | None]:
    items = cluster.json("get", "jobsets", "-n", CHAOS_NS)["items"]
    return {js["metadata"]["name"]: outcome(js) for js in items}


@dataclass
class ChaosReport:
    takeovers: dict[str, list[float]] = field(default_factory=dict)
    jobsets: int = 0
    job_events: int = 0
    seconds: float = 0.0

    def all_takeovers(self) -> list[float]:
        return [t for ts in self.takeovers.values() for t in ts]

    def figures(self) -> dict[str, Any]:
        every = self.all_takeovers()
        return {
            "jobsets": self.jobsets,
            "faults": len(every),
            "job_events_checked": self.job_events,
            "seconds": round(self.seconds, 1),
            "takeover_max_s": round(max(every), 2),
            "takeover_p50_s": round(percentile_50(every), 2),
            "by_fault": {
                k: {"n": len(v), "max_s": round(max(v), 2), "p50_s": round(percentile_50(v), 2)}
                for k, v in sorted(self.takeovers.items())
            },
        }


def run_chaos(chaos: ChaosCluster, seed: int, rounds: int, total_jobsets: int) -> ChaosReport:
    """Submit `total_jobsets` JobSets spread over `rounds` faults of the seeded schedule,
    then check every JobSet's outcome and the journal's invariants."""
    rng = random.Random(seed)
    cluster = chaos.cluster
    report = ChaosReport()
    t0 = time.monotonic()
    cluster.kubectl("create", "namespace", CHAOS_NS)
    expected: dict[str, Expected] = {}
    plan = schedule(seed, rounds)
    per_round = -(-total_jobsets // (rounds + 1))
    for fault in [*plan, None]:
        batch = jobsets(rng, len(expected), min(per_round, total_jobsets - len(expected)))
        for obj, exp in batch:
            submit(cluster, obj)
            expected[obj["metadata"]["name"]] = exp
        if fault is None:
            break
        time.sleep(rng.uniform(0.5, 3))  # let the batch get under way
        took = Faults(chaos, rng).run(fault)
        report.takeovers.setdefault(fault, []).append(took)
        print(f"chaos: {fault} taken over in {took:.2f}s")

    def all_finished() -> dict[str, Expected | None] | None:
        got = outcomes(cluster)
        done = len(got) == len(expected) and all(v is not None for v in got.values())
        return got if done else None

    final = eventually(all_finished, 300 + 4 * len(expected), "every JobSet to finish")
    assert final == expected
    time.sleep(0.5)  # the journal is flushed every 100 ms
    inv = chaos.invariants()
    assert inv.violations == []
    ours = {
        uid
        for uid in inv.capacity
        if uid in inv.attempts  # JobSets of this run that made Jobs
    }
    assert sorted(len(inv.attempts[u]) for u in ours) == sorted(
        e.restarts + 1 for e in expected.values()
    )
    report.jobsets = len(expected)
    report.job_events = inv.job_events
    report.seconds = time.monotonic() - t0
    return report
