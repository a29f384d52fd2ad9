"""Suspend / resume (with the Kueue template merge), InOrder startup, dependsOn, PVCs, TTL."""

from __future__ import annotations

import asyncio
from typing import Any

from jobset.resources import JOBSETS
from tests.eventually import eventually

from .helpers import Env, has_condition, jobset, rjob


def _suspended(jobs: list[dict[str, Any]]) -> list[bool]:
    return [bool(j["spec"].get("suspend")) for j in jobs]


async def test_created_suspended_then_resumed_with_template_merge(env: Env) -> None:
    await env.create(jobset("sus", rjob("a", 2), suspend=True))
    jobs = await env.wait_jobs("sus", 2)
    assert _suspended(jobs) == [True, True]
    js = await env.wait_jobset(
        "sus", lambda o: has_condition(o, "Suspended", reason="SuspendedJobs")
    )
    await env.patch_job_status(jobs[0], {"startTime": "2025-01-01T00:00:00Z"})
    # Kueue's contract: while suspended, pod template scheduling fields may change.
    patch = {
        "spec": {
            "suspend": False,
            "replicatedJobs": [
                {
                    **js["spec"]["replicatedJobs"][0],
                    "template": {**js["spec"]["replicatedJobs"][0]["template"]},
                }
            ],
        }
    }
    pod_template = patch["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod_template["metadata"] = {"labels": {"kueue.x-k8s.io/flavor": "a"}}
    pod_template["spec"]["nodeSelector"] = {"pool": "p1"}
    pod_template["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    await env.client.patch(JOBSETS, "sus", patch, env.ns)
    jobs = await env.wait_jobs("sus", 2, lambda js: _suspended(js) == [False, False])
    for job in jobs:
        pod = job["spec"]["template"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/flavor"] == "a"
        assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "sus"
        assert pod["spec"]["nodeSelector"] == {"pool": "p1"}
        assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert "startTime" not in jobs[0].get("status", {})
    await env.wait_jobset("sus", lambda o: has_condition(o, "Suspended", "False", "ResumeJobs"))


async def test_suspend_running_jobset(env: Env) -> None:
    await env.create(jobset("run", rjob("a", 2)))
    await env.wait_jobs("run", 2)
    await env.client.patch(JOBSETS, "run", {"spec": {"suspend": True}}, env.ns)
    await env.wait_jobs("run", 2, lambda js: _suspended(js) == [True, True])
    await env.wait_jobset("run", lambda o: has_condition(o, "Suspended", reason="SuspendedJobs"))


async def test_in_order_startup(env: Env) -> None:
    await env.create(
        jobset("io", rjob("a", 1), rjob("b", 2), startupPolicy={"startupPolicyOrder": "InOrder"})
    )
    jobs = await env.wait_jobs("io", 1)
    await env.wait_jobset(
        "io",
        lambda o: has_condition(
            o, "StartupPolicyInProgress", reason="InOrderStartupPolicyInProgress"
        ),
    )
    await asyncio.sleep(0.3)
    assert len(await env.jobs("io")) == 1  # b waits for a to be ready
    await env.ready_job(jobs[0])
    jobs = await env.wait_jobs("io", 3)
    for job in jobs[1:]:
        await env.ready_job(job)
    js = await env.wait_jobset(
        "io",
        lambda o: has_condition(
            o, "StartupPolicyCompleted", reason="InOrderStartupPolicyCompleted"
        ),
    )
    assert has_condition(js, "StartupPolicyInProgress", "False")


async def test_in_order_resume_one_replicated_job_at_a_time(env: Env) -> None:
    await env.create(
        jobset(
            "ir",
            rjob("a", 1),
            rjob("b", 1),
            suspend=True,
            startupPolicy={"startupPolicyOrder": "InOrder"},
        )
    )
    await env.wait_jobs("ir", 2, lambda js: _suspended(js) == [True, True])
    await env.client.patch(JOBSETS, "ir", {"spec": {"suspend": False}}, env.ns)
    jobs = await env.wait_jobs("ir", 2, lambda js: _suspended(js) == [False, True])
    await env.ready_job(jobs[0])
    jobs = await env.wait_jobs("ir", 2, lambda js: _suspended(js) == [False, False])
    await env.ready_job(jobs[1])
    await env.wait_jobset(
        "ir",
        lambda o: (
            has_condition(o, "Suspended", "False", "ResumeJobs")
            and has_condition(o, "StartupPolicyCompleted")
        ),
    )


async def test_depends_on_ready_then_complete(env: Env) -> None:
    await env.create(
        jobset(
            "dep",
            rjob("a", 1),
            rjob("b", 1, dependsOn=[{"name": "a", "status": "Ready"}]),
            rjob("c", 1, dependsOn=[{"name": "b", "status": "Complete"}]),
        )
    )
    jobs = await env.wait_jobs("dep", 1)
    await env.ready_job(jobs[0])
    jobs = await env.wait_jobs("dep", 2)
    await asyncio.sleep(0.3)
    assert len(await env.jobs("dep")) == 2
    await env.complete_job(jobs[1])
    jobs = await env.wait_jobs("dep", 3)
    assert jobs[2]["metadata"]["name"] == "dep-c-0"


def _claim(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


async def test_volume_claim_policies_delete_and_retain(env: Env) -> None:
    r = rjob("a", 1)
    r["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "ckpt", "mountPath": "/ckpt"},
        {"name": "data", "mountPath": "/data"},
    ]
    await env.create(
        jobset(
            "vol",
            r,
            volumeClaimPolicies=[
                {"templates": [_claim("ckpt")], "retentionPolicy": {"whenDeleted": "Delete"}},
                {"templates": [_claim("data")], "retentionPolicy": {"whenDeleted": "Retain"}},
            ],
        )
    )
    jobs = await env.wait_jobs("vol", 1)
    volumes = jobs[0]["spec"]["template"]["spec"]["volumes"]
    assert {v["persistentVolumeClaim"]["claimName"] for v in volumes} == {"ckpt-vol", "data-vol"}
    ckpt = await eventually(lambda: env.pvc("ckpt-vol"), lambda p: p is not None)
    data = await env.pvc("data-vol")
    assert ckpt is not None and data is not None
    assert ckpt["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    assert "ownerReferences" not in data["metadata"]
    await env.client.delete(JOBSETS, "vol", env.ns, propagation_policy="Foreground")
    await eventually(lambda: env.pvc("ckpt-vol"), lambda p: p is None)
    assert await env.pvc("data-vol") is not None


async def test_suspended_jobset_creates_pvcs(env: Env) -> None:
    r = rjob("a", 1)
    r["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "ckpt", "mountPath": "/ckpt"}
    ]
    await env.create(
        jobset("svol", r, suspend=True, volumeClaimPolicies=[{"templates": [_claim("ckpt")]}])
    )
    await eventually(lambda: env.pvc("ckpt-svol"), lambda p: p is not None)
    jobs = await env.wait_jobs("svol", 1)
    assert jobs[0]["spec"]["suspend"] is True


async def test_ttl_after_finished_deletes_jobset(env: Env) -> None:
    await env.create(jobset("ttl", rjob("a", 1), ttlSecondsAfterFinished=2))
    jobs = await env.wait_jobs("ttl", 1)
    await env.complete_job(jobs[0])
    await env.wait_jobset("ttl", lambda o: has_condition(o, "Completed"))

    async def exists() -> bool:
        out = await env.client.list(JOBSETS, env.ns)
        return any(o["metadata"]["name"] == "ttl" for o in out["items"])

    await eventually(exists, lambda e: not e, within=10)
