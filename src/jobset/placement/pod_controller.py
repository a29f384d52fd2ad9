"""The pod reconciler of the affinity strategy: repair followers that missed their domain.

The follower's nodeSelector comes from the leader's node as the pod webhook saw it in its
cache; a leader rescheduled after that (deleted and recreated by the Job controller)
leaves followers pinned to a domain the Job no longer holds. For each bound leader pod of
an affinity-strategy Job this reconciler compares every follower's nodeSelector with the
leader's domain, and on any mismatch deletes all the Job's followers, after marking each
with the `DisruptionTarget` condition (reason `ExclusivePlacementViolation`) so a Job's
podFailurePolicy can ignore these deletions. The Job controller recreates them, and the
pod webhook pins the new ones to the leader's current domain.

Deliberate difference from upstream: pods of the node-selector and planned strategies are
not reconciled. Their followers carry no `<topologyKey>` nodeSelector by design (the
node-selector strategy pins them by `namespaced-job` node labels) or the Job template's
planned one, so upstream's check would read them as misplaced and delete them forever.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from jobset.api import constants as c
from jobset.placement.affinity import follower_topology, is_leader_pod, is_scheduled
from jobset.placement.caches import PlacementCaches
from jobset.placement.strategy import strategy_of, topology_key_of
from jobset.runtime.cache import Object, controller_of
from jobset.runtime.client import PODS, ApiError, Client
from jobset.runtime.controller import Request, Result
from jobset.runtime.logging import get_logger

__all__ = ["PodReconciler", "leader_pod_filter", "misplaced_followers"]

DISRUPTION_TARGET = "DisruptionTarget"


def leader_pod_filter(pod: Mapping[str, Any]) -> bool:
    """Upstream's event filter: bound, live leader pods of affinity-strategy Jobs."""
    return (
        is_leader_pod(pod)
        and is_scheduled(pod)
        and strategy_of(pod) == "affinity"
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def enqueue_leaders(pod: Object) -> Iterable[Request]:
    if not leader_pod_filter(pod):
        return ()
    meta = pod["metadata"]
    return (Request(str(meta.get("namespace") or ""), str(meta["name"])),)


def misplaced_followers(
    pods: Iterable[Mapping[str, Any]], leader_domain: str, topology_key: str
) -> bool:
    """True when some follower is not pinned to the leader's domain."""
    return any(
        follower_topology(p, topology_key) != leader_domain for p in pods if not is_leader_pod(p)
    )


def _violation_condition() -> dict[str, str]:
    return {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": c.EXCLUSIVE_PLACEMENT_VIOLATION_REASON,
        "message": c.EXCLUSIVE_PLACEMENT_VIOLATION_MESSAGE,
        "lastTransitionTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


class PodReconciler:
    """`reconcile(Request)` for leader pods; see the module docstring."""

    def __init__(self, client: Client, caches: PlacementCaches, parallelism: int = 50) -> None:
        self.client = client
        self.caches = caches
        self.parallelism = parallelism
        self.deleted = 0  # followers deleted, for tests and metrics
        self.log = get_logger("pod-reconciler")

    async def reconcile(self, req: Request) -> Result:
        leader = self.caches.pods.store.get_by_name(req.namespace, req.name)
        if leader is None or not leader_pod_filter(leader):
            return Result()
        topology_key = topology_key_of(leader)
        job_key = (leader["metadata"].get("labels") or {}).get(c.JOB_KEY)
        owner = controller_of(leader)
        if topology_key is None or not job_key or owner is None:
            return Result()
        pods = self.caches.pods_of_job(req.namespace, str(job_key), str(owner.get("uid")))
        try:
            domain = self.caches.topology_of_node(str(leader["spec"]["nodeName"]), topology_key)
        except ValueError as err:
            # The leader's node is gone or unlabelled: do not delete on partial knowledge.
            if misplaced_followers(pods, "\0unknown", topology_key):
                raise RuntimeError(f"leader topology is unknown: {err}") from None
            return Result()
        if not misplaced_followers(pods, domain, topology_key):
            return Result()
        followers = [p for p in pods if not is_leader_pod(p)]
        self.log.info(
            "deleting follower pods placed outside the leader's domain",
            leader=str(req),
            domain=domain,
            followers=len(followers),
        )
        sem = asyncio.Semaphore(self.parallelism)

        async def evict(pod: Object) -> None:
            async with sem:
                await self._evict(pod)

        results = await asyncio.gather(*(evict(p) for p in followers), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]
        return Result()

    async def _evict(self, pod: Object) -> None:
        meta = pod["metadata"]
        ns, name = str(meta.get("namespace") or ""), str(meta["name"])
        conditions = list((pod.get("status") or {}).get("conditions") or [])
        if not any(
            x.get("type") == DISRUPTION_TARGET and x.get("status") == "True" for x in conditions
        ):
            conditions = [x for x in conditions if x.get("type") != DISRUPTION_TARGET]
            conditions.append(_violation_condition())
            try:
                await self.client.patch(
                    PODS,
                    name,
                    {
                        "metadata": {"resourceVersion": meta.get("resourceVersion")},
                        "status": {"conditions": conditions},
                    },
                    ns,
                    subresource="status",
                )
            except ApiError as err:
                if err.not_found:
                    return
                raise
        try:
            await self.client.delete(
                PODS, name, ns, propagation_policy="Background", uid=meta.get("uid")
            )
            self.deleted += 1
        except ApiError as err:
            if not (err.not_found or err.conflict):
                raise
