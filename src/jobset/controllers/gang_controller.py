"""Keeps the Workload and PodGroups of JobSets annotated `scheduling.jobset-py.dev/gang`.

What the objects should be comes from `jobset.api.gang`; this reconciler makes the cluster
match: the Workload and every PodGroup created with a controller ownerReference to the JobSet
(garbage collection deletes them with it), a PodGroup whose group changed size (an elastic
replica change) or that no Job needs any more (scale down) deleted and, if still needed,
created anew - PodGroup and Workload specs are immutable. Restarts and suspend/resume keep
the groups: recreated Jobs carry the same group names (`jobs.construct_job`).

On a cluster that does not serve `scheduling.k8s.io/v1alpha2` (Kubernetes before 1.36, or
GenericWorkload off) the JobSet gets condition `GangScheduling=False`, reason
`WorkloadAPIUnavailable`, and a Warning event, and is looked at again every minute; its pods
are then scheduled one by one (the API server drops `schedulingGroup`). With the objects in
place the condition reads True, reason `PodGroupsReady`.

No informer watches PodGroups: a cluster without the API must not hold up the controller's
start, and only annotated JobSets cost any request. A JobSet event (any change, and the
periodic resync) brings a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from jobset.api import constants as c
from jobset.api.gang import GANG_ANNOTATION, desired_pod_groups, desired_workload, gang_mode
from jobset.api.types import name_of, namespace_of
from jobset.resources import JOBSETS
from jobset.runtime.client import ApiError, Resource
from jobset.runtime.controller import Request, Result, enqueue_object
from jobset.runtime.logging import get_logger

__all__ = ["CONDITION", "PODGROUPS", "WORKLOADS", "GangController"]

WORKLOADS: Final = Resource("scheduling.k8s.io", "v1alpha2", "workloads", "Workload")
PODGROUPS: Final = Resource("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup")
CONDITION: Final = "GangScheduling"
UNAVAILABLE: Final = "WorkloadAPIUnavailable"
READY: Final = "PodGroupsReady"
RECHECK_SECONDS: Final = 60.0
_SPEC_KEYS: Final = ("podGroupTemplateRef", "schedulingPolicy")


def _owned_by(obj: Mapping[str, Any], js: Mapping[str, Any]) -> bool:
    uid = (js.get("metadata") or {}).get("uid")
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
    )


def _same_group(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    hs, ws = have.get("spec") or {}, want.get("spec") or {}
    return all(hs.get(k) == ws.get(k) for k in _SPEC_KEYS)


class GangController:
    """A second reconciler of JobSets, for the gang annotation alone."""

    def __init__(self, manager: Any) -> None:
        self.client = manager.client
        self.jobsets = manager.informer(JOBSETS)
        self.recorder = manager.recorder("jobset-gang-controller")
        self.controller = manager.controller("jobset-gang", self.reconcile)
        self.controller.watch(self.jobsets, enqueue_object())
        self.log = get_logger("jobset-gang-controller")

    async def reconcile(self, req: Request) -> Result:
        js = self.jobsets.store.get_by_name(req.namespace, req.name)
        if js is None or js["metadata"].get("deletionTimestamp") or gang_mode(js) is None:
            return Result()
        ns = namespace_of(js)
        selector = f"{c.JOBSET_NAME_KEY}={name_of(js)}"
        try:
            listed = await self.client.list(PODGROUPS, ns, label_selector=selector)
        except ApiError as err:
            if not err.not_found:
                raise
            await self._set_condition(
                js,
                "False",
                UNAVAILABLE,
                "this cluster does not serve scheduling.k8s.io/v1alpha2 podgroups (Kubernetes "
                f"1.36+ with GenericWorkload and GangScheduling): {GANG_ANNOTATION} has no "
                "effect and the pods are scheduled one by one",
            )
            return Result(requeue_after=RECHECK_SECONDS)
        await self._sync_workload(js)
        groups = await self._sync_groups(js, listed.get("items") or [])
        await self._set_condition(
            js,
            "True",
            READY,
            f"Workload {name_of(js)} and {groups} PodGroup(s) keep the pods in gangs "
            f"({GANG_ANNOTATION}={gang_mode(js)})",
        )
        return Result()

    async def _sync_workload(self, js: Mapping[str, Any]) -> None:
        want = desired_workload(js)
        if want is None:
            return
        ns, name = namespace_of(js), name_of(js)
        try:
            have = await self.client.get(WORKLOADS, name, ns)
        except ApiError as err:
            if not err.not_found:
                raise
            have = None
        if have is not None:
            if not _owned_by(have, js):
                return  # someone else's Workload of that name: left alone
            if (have.get("spec") or {}).get("podGroupTemplates") == want["spec"][
                "podGroupTemplates"
            ]:
                return
            # Templates are immutable: a new shape (replicas changed) is a new Workload.
            await self._delete(WORKLOADS, have)
        await self._create(WORKLOADS, want)

    async def _sync_groups(self, js: Mapping[str, Any], listed: list[dict[str, Any]]) -> int:
        want = desired_pod_groups(js)
        have = {name_of(pg): pg for pg in listed if _owned_by(pg, js)}
        stale = [n for n, pg in have.items() if n not in want or not _same_group(pg, want[n])]
        for name in stale:
            await self._delete(PODGROUPS, have.pop(name))
        for name, pg in want.items():
            current = have.get(name)
            if current is None or not _same_group(current, pg):
                await self._create(PODGROUPS, pg)
        return len(want)

    async def _create(self, res: Resource, obj: Mapping[str, Any]) -> None:
        try:
            await self.client.create(res, obj)
            self.log.info("created", kind=res.kind, name=name_of(obj))
        except ApiError as err:
            if not err.already_exists:
                raise

    async def _delete(self, res: Resource, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        try:
            await self.client.delete(
                res, str(meta.get("name")), str(meta.get("namespace")), uid=meta.get("uid")
            )
            self.log.info("deleted", kind=res.kind, name=meta.get("name"))
        except ApiError as err:
            if not (err.not_found or err.conflict):
                raise

    async def _set_condition(
        self, js: Mapping[str, Any], status: str, reason: str, message: str
    ) -> None:
        conds = list((js.get("status") or {}).get("conditions") or [])
        old = next((x for x in conds if x.get("type") == CONDITION), None)
        if old is not None and (old.get("status"), old.get("reason")) == (status, reason):
            return
        cond = {
            "type": CONDITION,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        conds = [cond if x is old else x for x in conds] if old is not None else [*conds, cond]
        try:
            await self.client.update_status(
                JOBSETS, {**js, "status": {**(js.get("status") or {}), "conditions": conds}}
            )
        except ApiError as err:
            if err.conflict or err.not_found:
                return  # a newer JobSet is on its way: its event brings the next pass
            raise
        self.recorder.event(js, "Warning" if status == "False" else "Normal", reason, message)
