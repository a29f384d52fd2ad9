"""A Job in another namespace that claims a JobSet's UID is not that JobSet's child.

Anyone who can write Jobs in their own namespace can copy a JobSet's name, UID and labels
into a Job's controller owner reference. The controller looks children up as upstream does
- controller owner of kind JobSet in the `jobset.x-k8s.io` group, in the JobSet's own
namespace - so such a Job can neither fail the JobSet, complete it, nor stand in for a
child Job that is missing.
"""

from __future__ import annotations

from typing import Any

from jobset.api import constants as c
from jobset.runtime.client import JOBS, ApiError

from .helpers import Env, has_condition, jobset, now, rjob


def forged(victim_job: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A copy of the victim's child Job (name, labels, owner reference) in `namespace`."""
    meta = victim_job["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": namespace,
            "labels": dict(meta["labels"]),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [
                {**ref, "blockOwnerDeletion": False} for ref in meta["ownerReferences"]
            ],
        },
        "spec": {
            "suspend": True,
            "template": {
                "metadata": {"labels": dict(victim_job["spec"]["template"]["metadata"]["labels"])},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                },
            },
        },
    }


async def set_status(env: Env, namespace: str, name: str, status: dict[str, Any]) -> None:
    await env.client.patch(JOBS, name, {"status": status}, namespace, subresource="status")


def finished(ctype: str) -> dict[str, Any]:
    t = now()
    conds = [{"type": ctype, "status": "True", "lastTransitionTime": t, "reason": "Forged"}]
    key = "failed" if ctype == "Failed" else "succeeded"
    if ctype == "Complete":
        conds.insert(0, {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": t})
    else:
        conds.insert(0, {"type": "FailureTarget", "status": "True", "lastTransitionTime": t})
    return {"startTime": t, key: 1, "conditions": conds}


async def test_a_job_of_another_namespace_with_the_jobsets_uid_is_no_child(env: Env) -> None:
    await env.create(jobset("v", rjob("w", 2)))
    jobs = await env.wait_jobs("v", 2)
    other = f"{env.ns}-other"
    await env.client.create(
        Env.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    # In the other namespace: the victim's first child, failed; its second, complete.
    for job, ctype in zip(jobs, ("Failed", "Complete"), strict=True):
        made = await env.client.create(JOBS, forged(job, other))
        assert made["metadata"]["ownerReferences"][0]["kind"] == c.KIND
        await set_status(env, other, job["metadata"]["name"], finished(ctype))
    # The victim loses its second child: it must be created again, though a Job of that
    # name, owner UID and labels exists (elsewhere).
    missing = jobs[1]
    await env.client.delete(
        JOBS, missing["metadata"]["name"], env.ns, propagation_policy="Background"
    )
    await env.remove_finalizers(missing)
    again = await env.wait_jobs(
        "v", 2, lambda js: js[1]["metadata"]["uid"] != missing["metadata"]["uid"]
    )
    assert [j["metadata"]["name"] for j in again] == ["v-w-0", "v-w-1"]
    # Neither forged status counted: the JobSet is neither failed, complete nor restarted.
    js = await env.get("v")
    status = js.get("status") or {}
    assert not has_condition(js, "Failed") and not has_condition(js, "Completed")
    assert status.get("restarts", 0) == 0
    assert again[0]["metadata"]["uid"] == jobs[0]["metadata"]["uid"]
    for rstatus in status.get("replicatedJobsStatus") or []:
        assert rstatus.get("failed", 0) == 0 and rstatus.get("succeeded", 0) == 0, rstatus
    try:
        await env.client.delete(JOBS, "v-w-0", other)
    except ApiError as err:
        assert err.not_found
