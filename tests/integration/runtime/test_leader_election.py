"""Two toy-controller *processes* with leader election against one `jobset sim` process.

Only the leader writes; SIGKILL of the leader hands over within the lease duration plus a
retry period; both replicas' /readyz tell the truth; a graceful stop releases the lease; a
leader that cannot renew stops its controllers and exits non-zero.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubesim.process import SimProcess, start_sim

pytestmark = [pytest.mark.kubectl]

LEASE, RENEW, RETRY = 4, 3, 1
ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Replica:
    identity: str
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)

    def get(self, path: str, port: str = "health") -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.ports[port]}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def metric(self, name: str, **labels: str) -> float:
        _, text = self.get("/metrics", "metrics")
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total


def spawn(sim: SimProcess, identity: str) -> Replica:
    cmd = [
        sys.executable,
        "-m",
        "tests.integration.runtime.toy_controller",
        "--kubeconfig",
        str(sim.kubeconfig),
        "--namespace",
        "le",
        "--leader-elect",
        "--leader-election-namespace",
        "le",
        "--leader-election-identity",
        identity,
        "--leader-elect-lease-duration",
        str(LEASE),
        "--leader-elect-renew-deadline",
        str(RENEW),
        "--leader-elect-retry-period",
        str(RETRY),
        "--bind-address",
        "127.0.0.1",
        "--metrics-port",
        "0",
        "--metrics-secure=false",  # plain HTTP, the opt-in: the test reads the metrics
        "--health-port",
        "0",
        "--graceful-shutdown-timeout",
        "5",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    replica = Replica(identity, proc)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            replica.lines.append(line)
            if '"serving"' in line:
                rec = json.loads(line)
                replica.ports[rec["server"]] = int(rec["port"])

    threading.Thread(target=read, daemon=True).start()
    wait_for(lambda: len(replica.ports) == 2, 20, replica)
    return replica


def wait_for(cond: Callable[[], Any], within: float, *replicas: Replica) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    logs = "\n".join(f"--- {r.identity}\n" + "".join(r.lines[-40:]) for r in replicas)
    raise AssertionError(f"condition not met within {within}s\n{logs}")


def lease_holder(sim: SimProcess) -> str:
    out = sim.kubectl("get", "lease", "-n", "le", "jobset-controller-leader", "-o", "json")
    return str(json.loads(out.stdout)["spec"].get("holderIdentity") or "")


def children_by_writer(sim: SimProcess, parent: str) -> dict[str, str]:
    out = json.loads(sim.kubectl("get", "secrets", "-n", "le", "-o", "json").stdout)
    return {
        s["metadata"]["name"]: s["metadata"]["annotations"]["toy.example.com/writer"]
        for s in out["items"]
        if s["metadata"]["name"].startswith(parent + "-")
    }


def make_parent(sim: SimProcess, name: str, replicas: int) -> None:
    sim.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": "le",
                    "labels": {"toy.example.com/parent": "true"},
                },
                "data": {"replicas": str(replicas), "value": "v"},
            }
        ),
    )


WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def writes(r: Replica) -> float:
    return sum(r.metric("rest_client_requests_total", method=m) for m in WRITE_METHODS)


def test_two_replicas_one_writer_and_handover_on_sigkill(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, "--sim-level", "none")
    replicas: list[Replica] = []
    try:
        sim.kubectl("create", "namespace", "le")
        a = spawn(sim, "replica-a")
        replicas.append(a)
        wait_for(lambda: "leading as replica-a" in a.get("/readyz?verbose")[1], 20, a)
        b = spawn(sim, "replica-b")
        replicas.append(b)
        _status, body = wait_for(lambda: (r := b.get("/readyz?verbose"))[0] == 200 and r, 20, a, b)
        assert "standby, leader is replica-a" in body and "[+]informers-synced ok" in body
        assert a.get("/readyz")[0] == 200

        # Only the leader writes.
        make_parent(sim, "p1", 3)
        wait_for(
            lambda: (
                children_by_writer(sim, "p1")
                == dict.fromkeys(("p1-0", "p1-1", "p1-2"), "replica-a")
            ),
            20,
            a,
            b,
        )
        time.sleep(2 * RETRY)  # give a misbehaving follower time to write too
        assert writes(b) == 0
        assert b.metric("rest_client_requests_total", method="GET") > 0  # it does read
        assert writes(a) > 0
        assert a.metric("leader_election_master_status") == 1
        assert b.metric("leader_election_master_status") == 0
        assert b.metric("controller_runtime_reconcile_total") == 0

        # SIGKILL the leader: no release; the follower takes over once the lease expires.
        killed_at = time.monotonic()
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        wait_for(lambda: "leading as replica-b" in b.get("/readyz?verbose")[1], LEASE + 10, b)
        handover = time.monotonic() - killed_at
        print(f"handover after SIGKILL: {handover:.2f}s (lease {LEASE}s, retry {RETRY}s)")
        assert handover <= LEASE + RETRY + 0.5, handover
        assert lease_holder(sim) == "replica-b"
        make_parent(sim, "p2", 2)
        wait_for(
            lambda: children_by_writer(sim, "p2") == {"p2-0": "replica-b", "p2-1": "replica-b"},
            20,
            b,
        )

        # A graceful stop releases the lease at once and exits 0.
        b.proc.send_signal(signal.SIGTERM)
        assert b.proc.wait(15) == 0
        assert lease_holder(sim) == ""
        assert any('"released lease"' in line for line in b.lines)
    finally:
        for r in replicas:
            if r.proc.poll() is None:
                r.proc.kill()
                r.proc.wait()
        sim.stop()


def test_leader_that_cannot_renew_stops_and_follower_readyz_is_honest(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, "--sim-level", "none")
    replicas: list[Replica] = []
    try:
        sim.kubectl("create", "namespace", "le")
        a = spawn(sim, "replica-a")
        replicas.append(a)
        wait_for(lambda: "leading as replica-a" in a.get("/readyz?verbose")[1], 20, a)
        b = spawn(sim, "replica-b")
        replicas.append(b)
        wait_for(lambda: b.get("/readyz")[0] == 200, 20, a, b)

        # A reconcile that never ends is in flight on the leader: losing the lease must
        # cancel it, not wait the 30 s graceful-shutdown timeout for it.
        sim.kubectl("create", "configmap", "stuck", "-n", "le", "--from-literal=hang=true")
        sim.kubectl("label", "configmap", "stuck", "-n", "le", "toy.example.com/parent=true")
        wait_for(lambda: '"reconcile hangs"' in "".join(a.lines), 20, a)

        # Someone else takes the lease (an operator, or a partitioned leader's successor):
        # replica-a cannot renew, stops its controllers within the renew deadline and exits
        # non-zero; replica-b keeps standing by behind the new holder and says so.
        for _ in range(20):  # the leader renews every RETRY s: retry a lost race (409)
            out = json.loads(
                sim.kubectl(
                    "get", "lease", "-n", "le", "jobset-controller-leader", "-o", "json"
                ).stdout
            )
            out["spec"]["holderIdentity"] = "intruder"
            out["spec"]["leaseDurationSeconds"] = 3600
            replaced = sim.kubectl("replace", "-f", "-", input=json.dumps(out), check=False)
            if replaced.returncode == 0:
                break
            assert "Conflict" in replaced.stderr, replaced.stderr
        else:
            raise AssertionError("could not take the lease: every replace conflicted")
        stolen_at = time.monotonic()
        assert a.proc.wait(RENEW + RETRY + 10) == 1
        assert time.monotonic() - stolen_at <= RENEW + 2 * RETRY + 2
        assert any('"leader election lost"' in line for line in a.lines)
        stopped = [json.loads(x) for x in a.lines if '"workers stopped"' in x]
        assert stopped and stopped[0]["cancelled"] == 1, stopped
        _, body = wait_for(
            lambda: (
                (r := b.get("/readyz?verbose"))[0] == 200 and "leader is intruder" in r[1] and r
            ),
            10,
            b,
        )
        assert writes(b) == 0

        # The API server goes away: the follower can no longer observe the lease, so it is
        # not "standing by" any more and /readyz says so.
        sim.stop()
        _status, body = wait_for(
            lambda: (r := b.get("/readyz?verbose"))[0] == 500 and r, LEASE + RENEW + 5, b
        )
        assert "[-]leader-election failed" in body
    finally:
        for r in replicas:
            if r.proc.poll() is None:
                r.proc.kill()
                r.proc.wait()
        sim.stop()
