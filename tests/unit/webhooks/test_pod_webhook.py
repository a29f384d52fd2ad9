"""The pod webhooks' and pod reconciler's rules, on hand-fed caches."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch

from jobset.api import constants as c
from jobset.api.presets import RANK_LABEL, RANK_OFFSET_KEY
from jobset.api.types import job_key
from jobset.placement.caches import POD_INDEXERS, PlacementCaches
from jobset.placement.pod_controller import leader_pod_filter, misplaced_followers
from jobset.runtime.client import PODS
from jobset.runtime.informer import Informer
from jobset.webhooks.pod_webhook import PodWebhook
from jobset.webhooks.review import AdmissionRequest, AdmissionResponse
from tests.unit.placement.helpers import NODES, POOL, node

KEY = job_key("default", "js-w-0")
OWNER = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "name": "js-w-0",
    "uid": "job-uid",
    "controller": True,
}


def pod(
    index: int,
    *,
    name: str = "",
    node_name: str = "",
    strategy: str | None = "affinity",
    priority: int | None = 0,
    selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    anns = {c.JOBSET_NAME_KEY: "js", c.JOB_COMPLETION_INDEX_ANNOTATION: str(index)}
    if strategy is not None:
        anns[c.EXCLUSIVE_KEY] = POOL
    if strategy == "node-selector":
        anns[c.NODE_SELECTOR_STRATEGY_KEY] = "true"
    if strategy == "planned":
        anns["placement.jobset.x-k8s.io/strategy"] = "planned"
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if priority is not None:
        spec["priority"] = priority
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = selector
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "resourceVersion": "1",
            "labels": {
                c.JOBSET_NAME_KEY: "js",
                c.REPLICATED_JOB_NAME_KEY: "w",
                c.JOB_INDEX_KEY: "0",
                c.JOB_KEY: KEY,
            },
            "annotations": anns,
            "ownerReferences": [OWNER],
        },
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def caches(pods: list[dict[str, Any]]) -> PlacementCaches:
    p = Informer(None, PODS, indexers=POD_INDEXERS)  # type: ignore[arg-type]
    p.replace(pods, "1")
    n = Informer(None, NODES)  # type: ignore[arg-type]
    n.replace([node("n1", "pool-1"), node("n2", "pool-2")], "1")
    return PlacementCaches(p, n)


def request(
    obj: dict[str, Any], operation: str = "CREATE", namespace: str = "default"
) -> AdmissionRequest:
    return AdmissionRequest("u", operation, {"kind": "Pod"}, namespace, "", obj, None, False)


def patched(original: dict[str, Any], resp: AdmissionResponse) -> dict[str, Any]:
    assert resp.allowed
    if not resp.patch:
        return original
    ops = json.loads(json.dumps(resp.patch))
    out: dict[str, Any] = jsonpatch.apply_patch(original, ops)
    return out


async def test_leader_gets_affinities_and_priority_label() -> None:
    leader = pod(0)
    out = patched(leader, await PodWebhook(caches([])).mutate(request(leader)))
    assert out["metadata"]["labels"][c.PRIORITY_KEY] == "0"
    anti = out["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert anti["topologyKey"] == POOL
    assert {"key": c.PRIORITY_KEY, "operator": "In", "values": ["0"]} in anti["labelSelector"][
        "matchExpressions"
    ]
    aff = out["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        0
    ]
    assert aff["labelSelector"]["matchExpressions"] == [
        {"key": c.JOB_KEY, "operator": "In", "values": [KEY]}
    ]
    # Attracted only by pods of its own namespace; repelled by other Jobs' pods in all.
    assert "namespaceSelector" not in aff
    assert anti["namespaceSelector"] == {}


async def test_follower_follows_a_bound_leader_and_waits_for_an_unbound_one() -> None:
    follower = pod(1)
    hook = PodWebhook(caches([pod(0, name="js-w-0-0-abcde")]))
    out = patched(follower, await hook.mutate(request(follower)))
    assert "nodeSelector" not in out["spec"]
    denied = await hook.validate(request(out))
    assert (
        not denied.allowed
        and denied.status
        and denied.status["message"] == "follower pod node selector not set"
    )

    hook = PodWebhook(caches([pod(0, name="js-w-0-0-abcde", node_name="n2")]))
    out = patched(follower, await hook.mutate(request(follower)))
    assert out["spec"]["nodeSelector"] == {POOL: "pool-2"}
    assert (await hook.validate(request(out))).allowed


async def test_follower_of_an_unbound_leader_with_a_selector_is_rejected_as_transient() -> None:
    follower = pod(1, selector={POOL: "pool-1"})
    hook = PodWebhook(caches([pod(0, name="js-w-0-0-abcde")]))
    resp = await hook.validate(request(follower))
    assert (
        not resp.allowed and resp.status and "expected, transient error" in resp.status["message"]
    )


async def test_other_strategies_and_other_pods_are_not_touched() -> None:
    hook = PodWebhook(caches([]))
    for strategy in ("node-selector", None):
        p = pod(1, strategy=strategy)
        resp = await hook.mutate(request(p))
        out = patched(p, resp)
        assert "affinity" not in out["spec"] and "nodeSelector" not in out["spec"]
        assert (await hook.validate(request(p))).allowed
    planned = pod(1, strategy="planned")
    out = patched(planned, await hook.mutate(request(planned)))
    assert out["metadata"]["labels"][c.PRIORITY_KEY] == "0" and "affinity" not in out["spec"]
    assert (await hook.validate(request(planned))).allowed
    unrelated = {"metadata": {"name": "x"}, "spec": {}}
    assert (await hook.mutate(request(unrelated))).patch is None


def test_reconciler_filter_and_misplacement() -> None:
    assert leader_pod_filter(pod(0, node_name="n1"))
    assert not leader_pod_filter(pod(0))
    assert not leader_pod_filter(pod(1, node_name="n1"))
    assert not leader_pod_filter(pod(0, node_name="n1", strategy="node-selector"))
    followers = [pod(1, selector={POOL: "pool-1"}), pod(2, selector={POOL: "pool-1"})]
    assert not misplaced_followers(followers, "pool-1", POOL)
    assert misplaced_followers([*followers, pod(3, selector={POOL: "pool-2"})], "pool-1", POOL)
    assert misplaced_followers([pod(3)], "pool-1", POOL)


async def test_no_patch_when_the_priority_label_is_already_right() -> None:
    planned = pod(1, strategy="planned")
    planned["metadata"]["labels"][c.PRIORITY_KEY] = "0"
    assert (await PodWebhook(caches([])).mutate(request(planned))).patch is None
    planned["metadata"]["labels"][c.PRIORITY_KEY] = "7"
    out = patched(planned, await PodWebhook(caches([])).mutate(request(planned)))
    assert out["metadata"]["labels"][c.PRIORITY_KEY] == "0"


def forged(labels: dict[str, str], owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "spy", "namespace": "tenant-b", "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"metadata": meta, "spec": {"containers": [{"name": "c"}], "priority": 0}}


async def test_placement_labels_that_are_not_the_pods_own_are_refused() -> None:
    hook = PodWebhook(caches([]))
    victim = job_key("default", "js-w-0")
    own_job = {**OWNER, "name": "mine", "uid": "u2"}
    cases = [
        (forged({c.JOB_KEY: victim}), "not controlled by a Job"),
        (forged({c.JOB_KEY: victim}, {**OWNER, "kind": "ReplicaSet"}), "not controlled by a Job"),
        # A Job of its own namespace named like the victim's still has another key.
        (forged({c.JOB_KEY: victim}, OWNER), "key of the pod's own Job (js-w-0 in namespace"),
        (
            forged({c.JOB_KEY: job_key("tenant-b", "mine"), c.PRIORITY_KEY: "1000"}, own_job),
            "must be the pod's priority (0)",
        ),
    ]
    for obj, message in cases:
        for operation in ("CREATE", "UPDATE"):
            resp = await hook.validate(request(obj, operation, "tenant-b"))
            assert not resp.allowed and resp.status, (obj, operation)
            assert message in resp.status["message"], resp.status
    ok = forged({c.JOB_KEY: job_key("tenant-b", "mine"), c.PRIORITY_KEY: "0"}, own_job)
    assert (await hook.validate(request(ok, "UPDATE", "tenant-b"))).allowed
    assert (await hook.validate(request(forged({"app": "x"}), "UPDATE", "tenant-b"))).allowed


async def test_preset_pods_get_their_rank_label_under_every_strategy() -> None:
    hook = PodWebhook(caches([]))
    for strategy in ("affinity", "node-selector", "planned", None):
        p = pod(1, strategy=strategy)
        p["metadata"]["annotations"][RANK_OFFSET_KEY] = "6"
        out = patched(p, await hook.mutate(request(p)))
        assert out["metadata"]["labels"][RANK_LABEL] == "7", strategy
    # A pod without labels gets one labels map holding the rank and the priority.
    bare = pod(2, strategy="planned")
    del bare["metadata"]["labels"]
    bare["metadata"]["annotations"][RANK_OFFSET_KEY] = "0"
    out = patched(bare, await hook.mutate(request(bare)))
    assert out["metadata"]["labels"] == {RANK_LABEL: "2", c.PRIORITY_KEY: "0"}
    # No preset annotation: no rank label.
    plain = pod(1, strategy="node-selector")
    assert (await hook.mutate(request(plain))).patch is None
