"""Events from the simulated cluster's components, read with the real kubectl: the Job
controller's, the scheduler's and the kubelet's reasons and messages, as on a cluster."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from typing import Any

import pytest

from kubesim.process import SimProcess
from tests.eventually import eventually_sync
from tests.sims import refuse_pods

pytestmark = [pytest.mark.kubectl]


def _ns(sim: SimProcess) -> str:
    name = f"ev-{uuid.uuid4().hex[:8]}"
    sim.kubectl("create", "namespace", name)
    return name


def _events(sim: SimProcess, ns: str, name: str) -> list[dict[str, Any]]:
    out = sim.kubectl(
        "get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}", "-o", "json"
    ).stdout
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


def _reasons(sim: SimProcess, ns: str, name: str) -> set[str]:
    return {e["reason"] for e in _events(sim, ns, name)}


def _job(name: str, ns: str, *, command: str, **spec: Any) -> str:
    pod_spec = spec.pop("pod_spec", {})
    labels = spec.pop("labels", {})
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "backoffLimit": spec.pop("backoffLimit", 0),
            **spec,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": pod_spec.pop("restartPolicy", "Never"),
                    "containers": [
                        {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", command]}
                    ],
                    **pod_spec,
                },
            },
        },
    }
    return json.dumps(job)


def _pods(sim: SimProcess, ns: str, job: str) -> list[str]:
    out = sim.kubectl("get", "pods", "-n", ns, "-l", f"job-name={job}", "-o", "name").stdout
    return [line.split("/", 1)[1] for line in out.split()]


def test_a_job_that_completes(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=_job("ok", ns, command="sleep 2", completions=2,
                                                parallelism=2))  # fmt: skip
    sim.kubectl("wait", "-n", ns, "job/ok", "--for=condition=Complete", "--timeout=60s")
    events = eventually_sync(
        lambda: _events(sim, ns, "ok"),
        lambda evs: {"SuccessfulCreate", "Completed"} <= {e["reason"] for e in evs},
        what="the Job controller's events",
    )
    created = sorted(e["message"] for e in events if e["reason"] == "SuccessfulCreate")
    pods = _pods(sim, ns, "ok")
    assert created == sorted(f"Created pod: {p}" for p in pods)
    completed = next(e for e in events if e["reason"] == "Completed")
    assert (completed["type"], completed["message"]) == ("Normal", "Job completed")
    assert completed["source"]["component"] == "job-controller"
    assert completed["involvedObject"]["kind"] == "Job"

    pod = pods[0]
    reasons = eventually_sync(
        lambda: _reasons(sim, ns, pod),
        lambda r: {"Scheduled", "Pulled", "Created", "Started"} <= r,
        what="the scheduler's and kubelet's events",
    )
    assert "Killing" not in reasons
    by_reason = {e["reason"]: e for e in _events(sim, ns, pod)}
    node = sim.kubectl("get", "pod", "-n", ns, pod, "-o", "jsonpath={.spec.nodeName}").stdout
    assert by_reason["Scheduled"]["message"] == f"Successfully assigned {ns}/{pod} to {node}"
    assert (
        by_reason["Pulled"]["message"]
        == 'Container image "busybox:1.36" already present on machine'
    )
    assert by_reason["Created"]["message"] == "Created container: main"
    assert by_reason["Started"]["involvedObject"]["fieldPath"] == "spec.containers{main}"
    assert by_reason["Started"]["source"] == {"component": "kubelet", "host": node}

    described = sim.kubectl("describe", "pod", "-n", ns, pod).stdout
    events_part = described.split("Events:", 1)[1]
    for text in (
        "Scheduled", "default-scheduler", f"Successfully assigned {ns}/{pod} to {node}",
        "kubelet", "Started container main",
    ):  # fmt: skip
        assert text in events_part
    described_job = sim.kubectl("describe", "job", "-n", ns, "ok").stdout
    assert "SuccessfulCreate" in described_job and "Job completed" in described_job


def test_an_unschedulable_pod_says_why(sim: SimProcess) -> None:
    ns = _ns(sim)
    job = _job("nowhere", ns, command="sleep 1", pod_spec={"nodeSelector": {"pool": "none"}})
    sim.kubectl("apply", "-f", "-", input=job)
    pod = eventually_sync(lambda: _pods(sim, ns, "nowhere"), what="the pod")[0]
    events = eventually_sync(
        lambda: [e for e in _events(sim, ns, pod) if e["reason"] == "FailedScheduling"],
        what="FailedScheduling",
    )
    assert events[0]["type"] == "Warning"
    assert events[0]["message"] == (
        "0/8 nodes are available: 8 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling."
    )
    described = sim.kubectl("describe", "pod", "-n", ns, pod).stdout
    assert "FailedScheduling" in described and "default-scheduler" in described
    selected = sim.kubectl(
        "get", "events", "-n", ns, "--field-selector", "reason=FailedScheduling", "-o", "name"
    ).stdout.split()
    assert len(selected) == 1


def test_a_crash_loop_is_one_backoff_event_with_a_count(sim: SimProcess) -> None:
    ns = _ns(sim)
    job = _job("crash", ns, command="exit 1", backoffLimit=3,
               pod_spec={"restartPolicy": "OnFailure"})  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=job)
    pod = eventually_sync(lambda: _pods(sim, ns, "crash"), what="the pod")[0]

    def backoffs() -> list[dict[str, Any]]:
        return [e for e in _events(sim, ns, pod) if e["reason"] == "BackOff"]

    events = eventually_sync(backoffs, lambda evs: evs and evs[0]["count"] >= 2, within=60,
                             what="a repeated BackOff")  # fmt: skip
    assert len(events) == 1  # repeats patch one Event
    uid = sim.kubectl("get", "pod", "-n", ns, pod, "-o", "jsonpath={.metadata.uid}").stdout
    assert events[0]["message"] == (
        f"Back-off restarting failed container main in pod {pod}_{ns}({uid})"
    )
    assert events[0]["type"] == "Warning"
    assert events[0]["lastTimestamp"] >= events[0]["firstTimestamp"]
    started = next(e for e in _events(sim, ns, pod) if e["reason"] == "Started")
    assert started["count"] >= 2  # each restart starts the container again
    job_reasons = eventually_sync(
        lambda: _reasons(sim, ns, "crash"),
        lambda r: "BackoffLimitExceeded" in r,
        within=60,
        what="the Job's failure event",
    )
    assert "SuccessfulCreate" in job_reasons


def test_pod_creation_refused_by_a_webhook_is_a_failed_create_event(sim: SimProcess) -> None:
    ns = _ns(sim)
    hook = f"deny.{ns}.example.com"
    refuse_pods(sim, ns, hook)
    try:
        sim.kubectl("apply", "-f", "-",
                    input=_job("refused", ns, command="sleep 1", labels={"hooked": "yes"}))  # fmt: skip
        events = eventually_sync(
            lambda: [e for e in _events(sim, ns, "refused") if e["reason"] == "FailedCreate"],
            what="FailedCreate",
        )
        assert events[0]["type"] == "Warning"
        assert events[0]["message"].startswith("Error creating: ")
        assert f'failed calling webhook "{hook}"' in events[0]["message"]
    finally:
        sim.kubectl("delete", "validatingwebhookconfiguration", ns, "--wait=false")


def test_events_k8s_io_is_a_view_of_the_same_events(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=_job("seen", ns, command="sleep 1"))
    pod = eventually_sync(lambda: _pods(sim, ns, "seen"), what="the pod")[0]
    eventually_sync(lambda: "Started" in _reasons(sim, ns, pod), what="the kubelet's events")

    # the components' core/v1 Events, read through events.k8s.io/v1
    def as_v1() -> list[dict[str, Any]]:
        out = sim.kubectl("get", "events.v1.events.k8s.io", "-n", ns, "--field-selector",
                          f"regarding.name={pod}", "-o", "json").stdout  # fmt: skip
        items: list[dict[str, Any]] = json.loads(out)["items"]
        return items

    started = next(e for e in as_v1() if e["reason"] == "Started")
    assert started["apiVersion"] == "events.k8s.io/v1"
    assert started["note"] == "Started container main"
    assert started["regarding"]["name"] == pod and started["reportingController"] == "kubelet"
    assert "message" not in started and "involvedObject" not in started

    # an Event written through events.k8s.io/v1 (as upstream's controller records) shows in
    # kubectl get events and kubectl describe (which selects by the object's uid too)
    uid = sim.kubectl("get", "pod", "-n", ns, pod, "-o", "jsonpath={.metadata.uid}").stdout
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{pod}.upstream", "namespace": ns},
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": pod, "namespace": ns, "uid": uid},
            "reason": "Reconciling", "note": "written through events.k8s.io", "type": "Normal",
            "action": "Reconciling", "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "jobset", "reportingInstance": "jobset-0"}  # fmt: skip
    sim.kubectl("create", "-f", "-", input=json.dumps(body))
    core = next(e for e in _events(sim, ns, pod) if e["reason"] == "Reconciling")
    assert (core["apiVersion"], core["message"], core["involvedObject"]["name"]) == (
        "v1", "written through events.k8s.io", pod)  # fmt: skip
    assert core["reportingComponent"] == "jobset"
    assert "written through events.k8s.io" in sim.kubectl("describe", "pod", "-n", ns, pod).stdout

    # a patch through either API changes the one object
    sim.kubectl("patch", "events.v1.events.k8s.io", f"{pod}.upstream", "-n", ns,
                "--type=merge", "-p", '{"note": "patched"}')  # fmt: skip
    core = next(e for e in _events(sim, ns, pod) if e["reason"] == "Reconciling")
    assert core["message"] == "patched"
    applied = sim.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(body), check=False)
    assert applied.returncode != 0 and "server-side apply of events.events.k8s.io" in applied.stderr
    names = sim.kubectl("get", "events.events.k8s.io", "-n", ns, "-o", "name").stdout.split()
    assert len(names) == len(sim.kubectl("get", "events", "-n", ns, "-o", "name").stdout.split())


def test_a_watch_through_events_k8s_io_sees_core_writes(sim: SimProcess) -> None:
    ns = _ns(sim)
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig)}
    watch = subprocess.Popen(
        ["kubectl", "get", "events.v1.events.k8s.io", "-n", ns, "--watch-only", "-o", "json",
         "--request-timeout", "5s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        # Written for a while, so some land after the watch has started however slowly
        # kubectl starts (those before it are in the list it does not print).
        for i in range(8):
            core = {"apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": f"x.{i}", "namespace": ns},
                    "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": ns},
                    "reason": "Tested", "message": "from core/v1", "type": "Normal"}  # fmt: skip
            sim.kubectl("create", "-f", "-", input=json.dumps(core))
            time.sleep(0.25)
        out, _ = watch.communicate(timeout=30)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.communicate()
    assert '"note": "from core/v1"' in out
    assert '"apiVersion": "events.k8s.io/v1"' in out and '"message"' not in out


def test_deleting_a_running_pod_records_killing(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=_job("long", ns, command="sleep 600"))
    pod = eventually_sync(lambda: _pods(sim, ns, "long"), what="the pod")[0]
    eventually_sync(lambda: "Started" in _reasons(sim, ns, pod), what="the container started")
    sim.kubectl("delete", "pod", "-n", ns, pod, "--wait=false")
    killing = eventually_sync(
        lambda: [e for e in _events(sim, ns, pod) if e["reason"] == "Killing"], what="Killing"
    )
    assert len(killing) == 1 and killing[0]["message"] == "Stopping container main"
    assert killing[0]["involvedObject"]["fieldPath"] == "spec.containers{main}"
