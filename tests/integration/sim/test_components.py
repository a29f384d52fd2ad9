"""The simulated Job controller, scheduler and kubelet, seen through a real client.

Each test starts a `SimCluster` in-process and talks to it over HTTPS with
`kubernetes_asyncio`, the client the JobSet controller uses, so what is checked here is what
a controller would observe: Job status and conditions, pod placement, pod status and logs.
`time_scale=0.01` makes `sleep 2s` last 20 ms.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from kubesim.apiserver.core.request import Request
from kubesim.apiserver.core.store import WatchEvent
from kubesim.cluster import SimCluster, SimOptions
from kubesim.controllers.jobpolicy import format_indexes, match_pod_failure_policy, parse_indexes
from tests.eventually import eventually

T = TypeVar("T")
NS = "default"
SCALE = 0.01


class Env:
    """A running simulated cluster and typed clients for it."""

    def __init__(self, cluster: SimCluster, api: client.ApiClient) -> None:
        self.cluster = cluster
        self.api = api
        self.batch = client.BatchV1Api(api)
        self.core = client.CoreV1Api(api)

    # The generated clients accept plain dicts as bodies (as the JobSet controller passes
    # them); their annotations only name the model classes.
    async def create_job(self, manifest: dict[str, Any]) -> client.V1Job:
        body: Any = manifest
        return await self.batch.create_namespaced_job(NS, body)

    async def create_pod(self, manifest: dict[str, Any]) -> client.V1Pod:
        body: Any = manifest
        return await self.core.create_namespaced_pod(NS, body)

    async def create_node(self, manifest: dict[str, Any]) -> client.V1Node:
        body: Any = manifest
        return await self.core.create_node(body)

    async def job(self, name: str) -> client.V1Job:
        return await self.batch.read_namespaced_job_status(name, NS)

    async def pods(self, job: str) -> list[client.V1Pod]:
        res = await self.core.list_namespaced_pod(
            NS, label_selector=f"batch.kubernetes.io/job-name={job}"
        )
        return sorted(res.items, key=lambda p: p.metadata.name)


async def _start(tmp_path: Path, level: str, nodes: str = "4") -> AsyncIterator[Env]:
    kubeconfig = tmp_path / f"kubeconfig-{level}"
    cluster = SimCluster(
        SimOptions(
            port=0, kubeconfig=str(kubeconfig), sim_level=level, nodes=nodes, time_scale=SCALE
        )
    )
    await cluster.start()
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    api = client.ApiClient(configuration=cfg)
    try:
        yield Env(cluster, api)
    finally:
        await api.close()
        await cluster.stop()


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async for e in _start(tmp_path, "pods"):
        yield e


@pytest.fixture
async def jobs_env(tmp_path: Path) -> AsyncIterator[Env]:
    async for e in _start(tmp_path, "jobs"):
        yield e


def job_manifest(
    name: str,
    command: list[str],
    *,
    restart_policy: str = "Never",
    container: dict[str, Any] | None = None,
    pod_spec: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    c = {"name": "main", "image": "busybox:1.36", "command": command, **(container or {})}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            **spec,
            "template": {
                "spec": {"restartPolicy": restart_policy, "containers": [c], **(pod_spec or {})}
            },
        },
    }


def conditions(job: client.V1Job) -> dict[str, client.V1JobCondition]:
    return {c.type: c for c in job.status.conditions or []}


def finished(job: client.V1Job) -> str | None:
    for c in job.status.conditions or []:
        if c.type in ("Complete", "Failed") and c.status == "True":
            return str(c.type)
    return None


async def wait_finished(env: Env, name: str, within: float = 10.0) -> client.V1Job:
    async def probe() -> client.V1Job | None:
        job = await env.job(name)
        return job if finished(job) else None

    return await eventually(probe, what=f"job {name} to finish", within=within)


# ------------------------------------------------------------------------------- level pods


async def test_indexed_job_completes_across_nodes(env: Env) -> None:
    manifest = job_manifest(
        "idx",
        ["sh", "-c", "echo index $JOB_COMPLETION_INDEX on $HOSTNAME; sleep 2s"],
        completionMode="Indexed",
        parallelism=4,
        completions=4,
        # 20 of a node's 32 CPUs: two pods cannot share a node.
        container={"resources": {"requests": {"cpu": "20"}}},
        pod_spec={"subdomain": "workers"},
    )
    await env.create_job(manifest)
    job = await wait_finished(env, "idx")

    conds = conditions(job)
    assert finished(job) == "Complete"
    assert conds["Complete"].reason == "CompletionsReached"
    assert conds["SuccessCriteriaMet"].status == "True"
    assert job.status.succeeded == 4
    assert not job.status.failed
    assert job.status.completed_indexes == "0-3"
    assert job.status.start_time is not None and job.status.completion_time is not None

    pods = await env.pods("idx")
    assert len(pods) == 4
    assert len({p.spec.node_name for p in pods}) == 4, "one pod per node"
    seen = set()
    for pod in pods:
        index = pod.metadata.annotations["batch.kubernetes.io/job-completion-index"]
        seen.add(int(index))
        assert pod.metadata.labels["batch.kubernetes.io/job-completion-index"] == index
        assert pod.metadata.labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid
        assert pod.metadata.labels["controller-uid"] == job.metadata.uid
        assert pod.metadata.labels["job-name"] == "idx"
        assert re.fullmatch(rf"idx-{index}-[a-z0-9]{{5}}", pod.metadata.name)
        assert pod.spec.hostname == f"idx-{index}"
        assert pod.spec.subdomain == "workers"
        ref = pod.metadata.owner_references[0]
        assert (ref.kind, ref.name, ref.uid) == ("Job", "idx", job.metadata.uid)
        assert ref.controller and ref.block_owner_deletion
        assert "batch.kubernetes.io/job-tracking" not in (pod.metadata.finalizers or [])
        env_var = next(e for e in pod.spec.containers[0].env if e.name == "JOB_COMPLETION_INDEX")
        assert env_var.value_from.field_ref.field_path == (
            "metadata.labels['batch.kubernetes.io/job-completion-index']"
        )
        assert pod.status.phase == "Succeeded"
        assert pod.status.pod_ip and pod.status.host_ip and pod.status.start_time
        state = pod.status.container_statuses[0].state.terminated
        assert (state.exit_code, state.reason) == (0, "Completed")
        log = await env.core.read_namespaced_pod_log(pod.metadata.name, NS)
        assert log == f"index {index} on idx-{index}\n"
    assert seen == {0, 1, 2, 3}


async def test_failing_pod_exhausts_backoff_limit(env: Env) -> None:
    await env.create_job(job_manifest("boom", ["sh", "-c", "exit 1"], backoffLimit=0))
    job = await wait_finished(env, "boom")
    conds = conditions(job)
    assert finished(job) == "Failed"
    assert conds["Failed"].reason == "BackoffLimitExceeded"
    assert conds["Failed"].message == "Job has reached the specified backoff limit"
    assert conds["FailureTarget"].reason == "BackoffLimitExceeded"
    assert "Complete" not in conds
    assert job.status.failed == 1 and not job.status.succeeded and not job.status.active
    assert job.status.completion_time is None
    (pod,) = await env.pods("boom")
    assert pod.status.phase == "Failed"
    state = pod.status.container_statuses[0].state.terminated
    assert (state.exit_code, state.reason) == (1, "Error")


async def test_restart_on_failure_counts_restarts(env: Env) -> None:
    """restartPolicy OnFailure: the kubelet restarts the container in place, and the Job
    controller counts the restarts against backoffLimit."""
    manifest = job_manifest(
        "again", ["sh", "-c", "exit 3"], restart_policy="OnFailure", backoffLimit=2
    )
    await env.create_job(manifest)

    async def restarted() -> client.V1Pod | None:
        for pod in await env.pods("again"):
            for cs in pod.status.container_statuses or []:
                if cs.restart_count >= 1:
                    return pod
        return None

    pod = await eventually(restarted, what="an in-place restart")
    cs = pod.status.container_statuses[0]
    assert cs.last_state.terminated.exit_code == 3
    job = await wait_finished(env, "again")
    assert finished(job) == "Failed"
    assert conditions(job)["Failed"].reason == "BackoffLimitExceeded"


async def test_pod_failure_policy_fails_job(env: Env) -> None:
    manifest = job_manifest(
        "pfp",
        ["sh", "-c", "exit 42"],
        backoffLimit=6,
        podFailurePolicy={
            "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]
        },
    )
    await env.create_job(manifest)
    job = await wait_finished(env, "pfp")
    failed = conditions(job)["Failed"]
    assert failed.reason == "PodFailurePolicy"
    (pod,) = await env.pods("pfp")
    assert failed.message == (
        f"Container main for pod {NS}/{pod.metadata.name} failed with exit code 42 matching "
        "FailJob rule at index 0"
    )


async def test_active_deadline_fails_job(env: Env) -> None:
    manifest = job_manifest("slow", ["sleep", "1000"], activeDeadlineSeconds=20)
    await env.create_job(manifest)
    job = await wait_finished(env, "slow")
    assert conditions(job)["Failed"].reason == "DeadlineExceeded"

    async def no_pods() -> bool:
        return not await env.pods("slow")

    await eventually(no_pods, what="the running pod to be removed")


async def test_suspend_and_resume(env: Env) -> None:
    manifest = job_manifest("nap", ["sleep", "200s"], parallelism=2, completions=2)
    await env.create_job(manifest)

    async def running(n: int) -> list[client.V1Pod] | None:
        pods = [p for p in await env.pods("nap") if p.status.phase == "Running"]
        return pods if len(pods) == n else None

    first = await eventually(lambda: running(2), what="two running pods")
    job = await env.job("nap")
    assert job.status.active == 2 and job.status.ready == 2

    await env.batch.patch_namespaced_job("nap", NS, {"spec": {"suspend": True}})

    async def suspended() -> client.V1Job | None:
        job = await env.job("nap")
        cond = conditions(job).get("Suspended")
        gone = not await env.pods("nap")
        return job if cond is not None and cond.status == "True" and gone else None

    job = await eventually(suspended, what="the job to be suspended with its pods gone")
    cond = conditions(job)["Suspended"]
    assert (cond.reason, cond.message) == ("JobSuspended", "Job suspended")
    assert not job.status.active
    assert not job.status.failed, "pods removed by suspension are not failures"
    assert finished(job) is None

    await env.batch.patch_namespaced_job("nap", NS, {"spec": {"suspend": False}})
    second = await eventually(lambda: running(2), what="two new running pods")
    assert {p.metadata.uid for p in second}.isdisjoint(p.metadata.uid for p in first)
    job = await env.job("nap")
    cond = conditions(job)["Suspended"]
    assert (cond.status, cond.reason, cond.message) == ("False", "JobResumed", "Job resumed")
    job = await wait_finished(env, "nap")
    assert finished(job) == "Complete" and job.status.succeeded == 2


async def test_deleting_running_pod_counts_as_failure(env: Env) -> None:
    await env.create_job(job_manifest("victim", ["sleep", "150s"], backoffLimit=3))

    async def running_pod() -> client.V1Pod | None:
        pods = [p for p in await env.pods("victim") if p.status.phase == "Running"]
        return pods[0] if pods else None

    pod = await eventually(running_pod, what="a running pod")
    # Every status the Job goes through, as (terminating, failed): a watch would see these.
    seen: list[tuple[int, int]] = []

    def record(rkey: tuple[str, str], ev: WatchEvent) -> None:
        if rkey == ("batch", "jobs") and ev.obj["metadata"]["name"] == "victim":
            status = ev.obj.get("status") or {}
            seen.append((status.get("terminating") or 0, status.get("failed") or 0))

    env.cluster.core.store.listeners.append(record)
    await env.core.delete_namespaced_pod(pod.metadata.name, NS)

    async def counted() -> client.V1Job | None:
        job = await env.job("victim")
        return job if job.status.failed == 1 else None

    await eventually(counted, what="the deleted pod to count as failed")

    async def replaced() -> client.V1Pod | None:
        pods = [p for p in await env.pods("victim") if p.metadata.uid != pod.metadata.uid]
        return pods[0] if pods else None

    await eventually(replaced, what="a replacement pod")
    job = await wait_finished(env, "victim")
    assert finished(job) == "Complete"
    assert (job.status.succeeded, job.status.failed) == (1, 1)
    # As in Kubernetes, the pod counts as failed as soon as it is deleted, while it is still
    # terminating, not only once its kubelet has stopped it.
    assert any(terminating for terminating, _ in seen), seen
    assert all(failed for terminating, failed in seen if terminating), seen
    with pytest.raises(ApiException) as err:
        await env.core.read_namespaced_pod(pod.metadata.name, NS)
    assert err.value.status == 404


async def test_unschedulable_pod_waits_for_capacity(env: Env) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpu"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "10s"],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    await env.create_pod(pod)

    async def unschedulable() -> client.V1PodCondition | None:
        p = await env.core.read_namespaced_pod_status("gpu", NS)
        for c in p.status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False":
                return c
        return None

    cond = await eventually(unschedulable, what="PodScheduled=False")
    assert cond.reason == "Unschedulable"
    assert cond.message == (
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. "
        "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )
    assert (await env.core.read_namespaced_pod("gpu", NS)).spec.node_name is None

    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-node", "labels": {"kubernetes.io/hostname": "gpu-node"}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "10", "nvidia.com/gpu": "8"},
            # Complete, because kubernetes_asyncio insists on these fields when reading.
            "nodeInfo": {
                "machineID": "m",
                "systemUUID": "u",
                "bootID": "b",
                "kernelVersion": "6.1",
                "osImage": "sim",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.32.0",
                "kubeProxyVersion": "v1.32.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }
    await env.create_node(node)

    async def succeeded() -> client.V1Pod | None:
        p = await env.core.read_namespaced_pod_status("gpu", NS)
        return p if p.status.phase == "Succeeded" else None

    p = await eventually(succeeded, what="the pod to run on the new node")
    assert p.spec.node_name == "gpu-node"
    scheduled = next(c for c in p.status.conditions if c.type == "PodScheduled")
    assert scheduled.status == "True"


async def test_scheduling_gates_hold_pods(env: Env) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gated"},
        "spec": {
            "restartPolicy": "Never",
            "schedulingGates": [{"name": "example.com/wait"}],
            "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
        },
    }
    await env.create_pod(pod)
    await asyncio.sleep(0.3)
    p = await env.core.read_namespaced_pod("gated", NS)
    assert p.spec.node_name is None and p.status.phase == "Pending"
    await env.core.patch_namespaced_pod("gated", NS, {"spec": {"schedulingGates": None}})

    async def done() -> client.V1Pod | None:
        p = await env.core.read_namespaced_pod("gated", NS)
        return p if p.status.phase == "Succeeded" else None

    p = await eventually(done, what="the ungated pod to run")
    assert p.spec.node_name


async def test_node_failure_fails_its_pods(env: Env) -> None:
    manifest = job_manifest(
        "fragile",
        ["sleep", "1000"],
        backoffLimit=0,
        pod_spec={
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 5,
                }
            ]
        },
    )
    await env.create_job(manifest)

    async def running() -> client.V1Pod | None:
        pods = [p for p in await env.pods("fragile") if p.status.phase == "Running"]
        return pods[0] if pods else None

    pod = await eventually(running, what="a running pod")
    node = await env.core.read_node_status(pod.spec.node_name)
    for c in node.status.conditions:
        if c.type == "Ready":
            c.status, c.reason = "False", "KubeletNotReady"
    await env.core.replace_node_status(pod.spec.node_name, node)

    async def failed() -> client.V1Pod | None:
        p = await env.core.read_namespaced_pod_status(pod.metadata.name, NS)
        return p if p.status.phase == "Failed" else None

    p = await eventually(failed, what="the pod on the failed node to fail")
    disruption = next(c for c in p.status.conditions if c.type == "DisruptionTarget")
    assert (disruption.status, disruption.reason) == ("True", "DeletionByTaintManager")
    job = await wait_finished(env, "fragile")
    assert conditions(job)["Failed"].reason == "BackoffLimitExceeded"


# ------------------------------------------------------------------------------- level jobs


async def test_jobs_level_advances_status_without_pods(jobs_env: Env) -> None:
    env = jobs_env
    await env.create_job(job_manifest("fast", ["sleep", "10s"], completions=4, parallelism=2))
    await env.create_job(job_manifest("bad", ["sh", "-c", "exit 1"], backoffLimit=1))

    async def active() -> client.V1Job | None:
        job = await env.job("fast")
        return job if job.status.active == 2 else None

    job = await eventually(active, what="the job to become active")
    assert job.status.ready == 2 and job.status.start_time is not None

    job = await wait_finished(env, "fast")
    assert finished(job) == "Complete"
    assert conditions(job)["Complete"].reason == "CompletionsReached"
    assert job.status.succeeded == 4 and not job.status.active

    job = await wait_finished(env, "bad")
    assert finished(job) == "Failed"
    assert conditions(job)["Failed"].reason == "BackoffLimitExceeded"
    assert job.status.failed == 2

    pods = await env.core.list_namespaced_pod(NS)
    assert pods.items == []


async def test_jobs_level_suspend(jobs_env: Env) -> None:
    env = jobs_env
    await env.create_job(job_manifest("held", ["sleep", "10s"], suspend=True))

    async def suspended() -> client.V1Job | None:
        job = await env.job("held")
        cond = conditions(job).get("Suspended")
        return job if cond is not None and cond.status == "True" else None

    job = await eventually(suspended, what="the Suspended condition")
    assert job.status.start_time is None
    await asyncio.sleep(0.2)
    assert finished(await env.job("held")) is None
    await env.batch.patch_namespaced_job("held", NS, {"spec": {"suspend": False}})
    job = await wait_finished(env, "held")
    assert finished(job) == "Complete"
    assert conditions(job)["Suspended"].reason == "JobResumed"


async def test_in_process_core_and_http_agree(env: Env) -> None:
    """Writes made through the in-process API core (as the simulated components make them)
    reach HTTP clients too: a Job created in-process runs and is visible over HTTP."""
    jobs_rt = env.cluster.core.registry.get("batch", "v1", "jobs")
    assert jobs_rt is not None
    await env.cluster.core.create(jobs_rt, NS, job_manifest("inproc", ["sleep", "1s"]), Request())
    job = await wait_finished(env, "inproc")
    assert finished(job) == "Complete"


# ------------------------------------------------------------------------------- pure logic


def test_index_sets_round_trip() -> None:
    assert format_indexes({5, 0, 1, 2, 3, 9, 8}) == "0-3,5,8-9"
    assert format_indexes(()) == ""
    assert parse_indexes("0-3,5,8-9") == {0, 1, 2, 3, 5, 8, 9}
    assert parse_indexes("0-3,7", limit=3) == {0, 1, 2}
    assert parse_indexes("x,2,-1,4-2") == {2}


def test_pod_failure_policy_rules_in_order() -> None:
    policy = {
        "rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0, 3]}},
            {"action": "Count", "onExitCodes": {"operator": "In", "values": [3]}},
        ]
    }

    def pod(code: int, disrupted: bool = False) -> dict[str, Any]:
        conds = [{"type": "DisruptionTarget", "status": "True"}] if disrupted else []
        return {
            "metadata": {"namespace": "ns", "name": "p"},
            "status": {
                "conditions": conds,
                "containerStatuses": [
                    {"name": "main", "state": {"terminated": {"exitCode": code}}}
                ],
            },
        }

    assert match_pod_failure_policy(policy, pod(137, disrupted=True)) == (None, False, "Ignore")
    assert match_pod_failure_policy(policy, pod(3)) == (None, True, "Count")
    assert match_pod_failure_policy(policy, pod(2)) == (
        "Container main for pod ns/p failed with exit code 2 matching FailJob rule at index 1",
        True,
        "FailJob",
    )
    assert match_pod_failure_policy(None, pod(2)) == (None, True, None)
