"""Creation, success, failure without policy, service, replicatedJobsStatus
(upstream jobset_controller_test.go entries of the same names)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from jobset.runtime.client import EVENTS, ApiError
from tests.eventually import eventually

from .helpers import Env, has_condition, jobset, rjob


async def test_creates_jobs_service_and_succeeds(env: Env) -> None:
    js = await env.create(jobset("ok"))
    jobs = await env.wait_jobs("ok", 4)
    assert [j["metadata"]["name"] for j in jobs] == ["ok-a-0", "ok-b-0", "ok-b-1", "ok-b-2"]
    uid = js["metadata"]["uid"]
    for job in jobs:
        ref = job["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
            "JobSet",
            uid,
            True,
            True,
        )
        labels = job["metadata"]["labels"]
        assert labels["jobset.sigs.k8s.io/restart-attempt"] == "0"
        assert labels["jobset.sigs.k8s.io/global-replicas"] == "4"
        assert (
            labels["jobset.sigs.k8s.io/job-key"]
            == hashlib.sha1(f"{env.ns}/{job['metadata']['name']}".encode()).hexdigest()
        )
        assert job["spec"]["suspend"] is False
        assert job["spec"]["template"]["spec"]["subdomain"] == "ok"
    svc = await env.service("ok")
    assert svc is not None and svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    js = await env.wait_jobset(
        "ok", lambda o: len((o.get("status") or {}).get("replicatedJobsStatus") or []) == 2
    )
    for job in jobs[:3]:
        await env.complete_job(job)
    js = await env.wait_jobset(
        "ok",
        lambda o: any(
            s["name"] == "b" and s["succeeded"] == 2 for s in o["status"]["replicatedJobsStatus"]
        ),
    )
    assert not has_condition(js, "Completed")
    await env.complete_job(jobs[3])
    js = await env.wait_jobset(
        "ok", lambda o: has_condition(o, "Completed", reason="AllJobsCompleted")
    )
    assert js["status"]["terminalState"] == "Completed"
    statuses = {s["name"]: s for s in js["status"]["replicatedJobsStatus"]}
    assert statuses["a"]["succeeded"] == 1 and statuses["b"]["succeeded"] == 3


async def test_ignores_jobs_with_other_owner_uid(env: Env) -> None:
    await env.create(jobset("own", rjob("a", 1)))
    jobs = await env.wait_jobs("own", 1)
    dummy = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "dummy-job",
            "namespace": env.ns,
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "own",
                "jobset.sigs.k8s.io/replicatedjob-name": "zz",
            },
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "own",
                    "uid": "12345678-1234-1234-1234-123456789abc",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "bash"}]}
            }
        },
    }
    from jobset.runtime.client import JOBS

    created = await env.client.create(JOBS, dummy)
    try:  # garbage collection may already have removed it (its owner does not exist)
        await env.fail_job(created)
    except ApiError as err:
        assert err.not_found
    await env.complete_job(jobs[0])
    js = await env.wait_jobset("own", lambda o: has_condition(o, "Completed"))
    assert not has_condition(js, "Failed")
    assert js["status"]["replicatedJobsStatus"] == [
        {"name": "a", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]


async def test_failure_without_policy_fails_and_deletes_active_jobs(env: Env) -> None:
    await env.create(jobset("bad"))
    jobs = await env.wait_jobs("bad", 4)
    await env.fail_job(jobs[1])
    js = await env.wait_jobset("bad", lambda o: has_condition(o, "Failed", reason="FailedJobs"))
    assert js["status"]["terminalState"] == "Failed"
    assert "first failed job: bad-b-0" in js["status"]["conditions"][0]["message"]
    # active jobs are deleted after the JobSet fails; the failed one stays
    remaining = await env.wait_jobs("bad", 1)
    assert remaining[0]["metadata"]["name"] == "bad-b-0"


async def test_active_jobs_deleted_after_success_policy_any(env: Env) -> None:
    await env.create(
        jobset("any", successPolicy={"operator": "Any", "targetReplicatedJobs": ["b"]})
    )
    jobs = await env.wait_jobs("any", 4)
    await env.complete_job(jobs[2])
    await env.wait_jobset("any", lambda o: has_condition(o, "Completed"))
    remaining = await env.wait_jobs("any", 1)
    assert remaining[0]["metadata"]["name"] == "any-b-1"


async def test_service_recreated_after_deletion(env: Env) -> None:
    from jobset.runtime.client import SERVICES

    await env.create(jobset("svc", rjob("a", 1), network={"subdomain": "net"}))
    await env.wait_jobs("svc", 1)
    first = await env.service("net")
    assert first is not None
    await env.client.delete(SERVICES, "net", env.ns)

    async def svc() -> object:
        return await env.service("net")

    again = await eventually(
        svc,
        lambda s: s is not None and s["metadata"]["uid"] != first["metadata"]["uid"],  # type: ignore[index]
    )
    assert again is not None


async def test_generate_name_service_named_after_jobset(env: Env) -> None:
    js = jobset("", rjob("a", 1))
    js["metadata"] = {"generateName": "gen-"}
    created = await env.create(js)
    name = created["metadata"]["name"]
    assert name.startswith("gen-")
    jobs = await env.wait_jobs(name, 1)
    assert jobs[0]["spec"]["template"]["spec"]["subdomain"] == name
    assert await env.service(name) is not None


async def test_coordinator_label_and_annotation(env: Env) -> None:
    await env.create(
        jobset(
            "co",
            rjob("a", 1, parallelism=2),
            rjob("b", 2),
            coordinator={"replicatedJob": "a", "jobIndex": 0, "podIndex": 1},
        )
    )
    jobs = await env.wait_jobs("co", 3)
    for job in jobs:
        for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
            assert meta["labels"]["jobset.sigs.k8s.io/coordinator"] == "co-a-0-1.co"
            assert meta["annotations"]["jobset.sigs.k8s.io/coordinator"] == "co-a-0-1.co"


async def test_replicated_jobs_status_ready_and_active(env: Env) -> None:
    await env.create(jobset("st", rjob("a", 2, parallelism=2)))
    jobs = await env.wait_jobs("st", 2)
    await env.ready_job(jobs[0])
    js = await env.wait_jobset(
        "st",
        lambda o: (o.get("status") or {}).get("replicatedJobsStatus", [{}])[0].get("ready") == 1,
    )
    assert js["status"]["replicatedJobsStatus"] == [
        {"name": "a", "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}
    ]


async def test_managed_by_other_controller_is_ignored(env: Env) -> None:
    import asyncio

    await env.create(jobset("ext", rjob("a", 1), managedBy="kueue.x-k8s.io/multikueue"))
    await asyncio.sleep(1.0)
    assert await env.jobs("ext") == []
    assert "status" not in await env.get("ext") or not (await env.get("ext"))["status"]


async def test_invalid_stored_jobset_fails_with_warning_event(env: Env) -> None:
    # Stored without the webhook: a success-policy target that does not exist.
    await env.create(
        jobset(
            "inv", rjob("a", 1), successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]}
        )
    )
    js = await env.wait_jobset(
        "inv", lambda o: has_condition(o, "Failed", reason="ValidationFailed")
    )
    assert "nope" in js["status"]["conditions"][0]["message"]
    assert await env.jobs("inv") == []
    from jobset.runtime.client import EVENTS

    async def events() -> list[dict[str, object]]:
        out = await env.client.list(EVENTS, env.ns)
        return [e for e in out["items"] if e.get("reason") == "ValidationFailed"]

    evs = await eventually(events, lambda e: len(e) == 1)
    assert evs[0]["type"] == "Warning"


@pytest.mark.kubectl
async def test_restarts_is_serialised_before_any_restart(env: Env) -> None:
    # Upstream's status always carries `restarts` (no omitempty): RESTARTS reads 0, not "".
    await env.create(jobset("zero", rjob("a", 2)))
    jobs = await env.wait_jobs("zero", 2)
    for job in jobs:
        await env.ready_job(job)
    js = await env.wait_jobset("zero", lambda o: "restarts" in (o.get("status") or {}))
    assert js["status"]["restarts"] == 0
    out = env.sim.kubectl("get", "jobsets", "zero", "-n", env.ns, "--no-headers").stdout
    columns = out.split()
    assert columns[0] == "zero" and "0" in columns[1:], out


async def test_job_the_api_refuses_is_a_job_creation_failed_event(env: Env) -> None:
    """upstream's "job creation fails" case: kube-apiserver refuses a child Job whose
    container has no image, and the controller says so on the JobSet."""
    await env.create(jobset("noimage", rjob("a", 1, image="")))

    async def failures() -> list[dict[str, Any]]:
        listed = await env.client.list(EVENTS, env.ns)
        return [
            e
            for e in listed["items"]
            if e.get("reason") == "JobCreationFailed"
            and (e.get("involvedObject") or {}).get("name") == "noimage"
        ]

    events = await eventually(failures, what="a JobCreationFailed event")
    assert events[0]["type"] == "Warning"
    assert "spec.template.spec.containers[0].image: Required value" in events[0]["message"]
    assert await env.jobs("noimage") == []
