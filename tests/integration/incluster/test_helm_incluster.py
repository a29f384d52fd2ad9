"""`helm install` of the chart with 2 replicas, then what production does to it: JobSets
submitted with kubectl, an invalid one denied by the in-cluster webhook, the leader's pod
deleted and its process SIGKILLed, a `helm upgrade` and `helm rollback` while a JobSet runs,
and `helm uninstall`. The tests of this module run in order on one release.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from jobset.dev.examplekit import load_example, observe, unmet
from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL
from tests.integration.incluster.admissions import AdmissionLoad
from tests.integration.incluster.conftest import (
    DEPLOYMENT,
    LEADER_ELECTION,
    NS,
    REPO,
    Cluster,
    eventually,
    jobset_manifest,
    namespace,
)
from tests.logs import traceback_lines

pytestmark = pytest.mark.timeout(600)

VALUES = {"controller": {"replicas": 2, "leaderElection": LEADER_ELECTION}}


def jobset(name: str, sleep: str = "2s", replicas: int = 2) -> str:
    """The shared one-pod-Jobs JobSet of conftest.py, in the default namespace."""
    return jobset_manifest(name, "default", sleep=sleep, replicas=replicas)


def terminal(cluster: Cluster, name: str) -> dict[str, object]:
    def done() -> dict[str, object] | None:
        js = cluster.json("get", "jobset", name, "-n", "default")
        return js if (js.get("status") or {}).get("terminalState") else None

    return eventually(done, 180, f"JobSet {name} to finish")


def example_reaches_its_outcome(cluster: Cluster, file: str) -> None:
    example = load_example(REPO / "examples" / file)
    cluster.kubectl(*example.apply_args(), "-n", "default")

    def met() -> bool:
        seen = observe(cluster.kubectl, "default", example.name, example.expect)
        return not unmet(example.expect, seen)

    eventually(met, 180, f"{file}: {example.expect}")


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Cluster:
    release = cluster.install(VALUES)
    assert release["status"] == "deployed"
    cluster.rollout()
    return cluster


def test_two_replicas_roll_out_and_exactly_one_leads(installed: Cluster) -> None:
    pods = installed.ready_pods()
    assert len(pods) == 2, installed.controller_pods()
    leader = eventually(installed.leader, 60, "a lease holder")
    assert leader in pods
    # Each pod runs the wheel's `jobset controller` as the chart's uid, in-cluster config.
    procs = installed.controller_processes()
    assert len(procs) == 2, procs
    assert {uid for _, uid, _ in procs} == {65532}
    assert all("--leader-elect" in cmd and "--kubeconfig" not in cmd for _, _, cmd in procs)
    for pod in installed.controller_pods():
        assert pod["status"]["podIP"] != pod["status"]["hostIP"]
        # Read-only root, only /tmp writable: a write elsewhere would show here.
        log = installed.kubectl("logs", pod["metadata"]["name"], "-n", NS)
        assert "caches synced" in log
        # The planning threads give the loop the interpreter back every 0.5 ms (gilswitch).
        (starting,) = [json.loads(line) for line in log.splitlines() if '"starting"' in line]
        assert starting["gil_switch_interval"] == LOOP_SWITCH_INTERVAL, starting
        for problem in ("Read-only file system", "Permission denied"):
            assert problem not in log, log
        assert not traceback_lines(log), log
    # Both replicas serve webhooks: both are ready endpoints of the webhook Service.
    endpoints = installed.json("get", "endpoints", "jobset-webhook-service", "-n", NS)
    ready = [a["ip"] for s in endpoints["subsets"] for a in s.get("addresses") or []]
    assert sorted(ready) == sorted(p["status"]["podIP"] for p in installed.controller_pods())


def test_examples_reach_their_outcomes(installed: Cluster) -> None:
    for file in ("simple.yaml", "failure-policy-restartjobset.yaml"):
        example_reaches_its_outcome(installed, file)


def test_invalid_jobset_is_denied_by_the_in_cluster_webhook(installed: Cluster) -> None:
    # A rule only the validating webhook knows (the CRD schema cannot count name lengths):
    # the API server reached a controller pod through the webhook Service to refuse it.
    name = "a" * 56
    bad = yaml.safe_load(jobset(name))
    out = installed.sim.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert out.returncode != 0
    assert "job names generated for this JobSet will exceed 63 characters" in out.stderr, out.stderr
    missing = installed.sim.kubectl("get", "jobset", name, check=False)
    assert missing.returncode != 0


def test_leader_loss_is_taken_over_and_nothing_is_created_twice(installed: Cluster) -> None:
    creates_before = installed.requests("create", "jobs")
    jobs_before = len(installed.json("get", "jobs", "-A")["items"])
    # 1. The leader's pod is deleted: the ReplicaSet replaces it, the standby takes over.
    first = installed.leader()
    installed.kubectl("delete", "pod", first, "-n", NS, "--wait=false")
    second = eventually(
        lambda: (lambda h: h if h and h != first else None)(installed.leader()),
        LEADER_ELECTION["leaseDuration"] + 30,
        "a new leader",
    )
    installed.kubectl("apply", "-f", "-", input=jobset("after-delete"))
    assert terminal(installed, "after-delete")["status"]["terminalState"] == "Completed"
    installed.rollout()
    assert len(installed.ready_pods()) == 2 and first not in installed.ready_pods()
    # 2. The new leader's process is SIGKILLed: the container restarts in its pod, and a
    #    leader (the restarted one or the standby) reconciles again.
    pid = next(pid for pid, _, _ in installed.controller_processes() if _pod_of(pid) == second)
    os.kill(pid, signal.SIGKILL)
    eventually(lambda: _restarts(installed, second) >= 1 or None, 120, "the container restart")
    installed.kubectl("apply", "-f", "-", input=jobset("after-kill"))
    assert terminal(installed, "after-kill")["status"]["terminalState"] == "Completed"
    # Nothing lost or duplicated: one create per Job, restarts exact.
    jobs_after = len(installed.json("get", "jobs", "-A")["items"])
    assert installed.requests("create", "jobs") - creates_before == jobs_after - jobs_before == 4
    for name in ("after-delete", "after-kill"):
        js = installed.json("get", "jobset", name, "-n", "default")
        assert js["status"]["restarts"] == 0


def _pod_of(pid: int) -> str:
    """The pod a process runs in: its HOSTNAME is the pod's name, as in Kubernetes."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    for entry in environ:
        if entry.startswith(b"HOSTNAME="):
            return entry.split(b"=", 1)[1].decode()
    return ""


def _all_with(cluster: Cluster, arg: str) -> bool:
    """Exactly the two replicas' processes run, all with `arg`."""
    procs = cluster.controller_processes()
    return len(procs) == 2 and all(arg in cmd for _, _, cmd in procs)


def _restarts(cluster: Cluster, pod: str) -> int:
    status = cluster.json("get", "pod", pod, "-n", NS)["status"]
    return sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or [])


def test_upgrade_and_rollback_roll_the_deployment_without_disturbing_jobsets(
    installed: Cluster,
) -> None:
    installed.kubectl("apply", "-f", "-", input=jobset("long", sleep="600s"))  # 30 s here
    old_rs = {rs["metadata"]["name"] for rs in installed.json("get", "rs", "-n", NS)["items"]}
    values = {"controller": {**VALUES["controller"], "logLevel": "DEBUG"}}
    # Admissions never stop meanwhile, and not one may fail (docs/reliability.md,
    # "Upgrades"; the upgrade from an older release is test_upgrade_incluster.py's).
    with namespace(installed, "admissions") as ns:
        load = AdmissionLoad(installed.sim.kubeconfig, ns)
        load.start()
        try:
            load.mark("upgrade")
            assert installed.upgrade(values)["revision"] == 2
            installed.rollout()
            rs_now = installed.json("get", "rs", "-n", NS)["items"]
            new = [rs for rs in rs_now if rs["metadata"]["name"] not in old_rs]
            assert len(new) == 1 and new[0]["status"].get("readyReplicas") == 2
            # The old pods' processes drain (SIGTERM, graceful shutdown) after the rollout.
            eventually(
                lambda: _all_with(installed, "--log-level=DEBUG"), 90, "only DEBUG processes"
            )
            history = installed.kubectl("rollout", "history", f"deployment/{DEPLOYMENT}", "-n", NS)
            assert "2" in history.split()
            load.mark("rollback")
            installed.helm.rollback("jobset", timeout=120)
            installed.rollout()
            eventually(lambda: _all_with(installed, "--log-level=INFO"), 90, "only INFO processes")
            load.mark("end")
        finally:
            load.stop()
        print("admissions:", load.sent, "failed:", load.failures[:10])
        assert load.failures == []
        assert load.sent_between("upgrade", "rollback") > 10
        assert load.sent_between("rollback", "end") > 10
    js = terminal(installed, "long")
    assert js["status"]["terminalState"] == "Completed" and js["status"]["restarts"] == 0


def test_uninstall_ends_every_controller_process(installed: Cluster) -> None:
    installed.helm.uninstall("jobset", timeout=120)
    eventually(lambda: not installed.controller_processes() or None, 90, "no controller left")
    time.sleep(0.5)
    assert installed.controller_processes() == []
