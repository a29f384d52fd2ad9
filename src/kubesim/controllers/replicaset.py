"""The simulated ReplicaSet controller (apps/v1, as kube-controller-manager's), and behind
the same code its replication manager (core/v1 ReplicationControllers): upstream runs the
ReplicaSet controller for those too, through an adapter; here `Replicated` is that adapter
(which store, which kind in owner references, how the selector is spelled).

- Pods come from `spec.template` (generateName `<rs>-`), with a controller owner reference
  (`controller: true`, `blockOwnerDeletion: true`) to the ReplicaSet.
- Adoption and release by selector: a pod without a controller whose labels match is adopted
  (its ownerReferences patched); an owned pod whose labels stop matching is released.
- Too few active pods (not terminal, not being deleted): create the difference (at most 500
  per sync); too many: delete the most expendable (`rollout.pods_to_delete`). A failed create
  (a webhook denial, say) sets the `ReplicaFailure` condition (reason `FailedCreate`) and is
  retried with back-off.
- Status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (Ready for
  `minReadySeconds`, re-checked when that time comes), observedGeneration.

Not modelled: Events, the slow-start batching of creates, expectations (this controller reads
the store its writes go to, so it never sees its own writes late).
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.base.controller import PODS, Controller, controller_ref, meta_key
from kubesim.clock import now_rfc3339
from kubesim.controllers import rollout
from kubesim.machinery.errors import ApiError
from kubesim.machinery.selectors import LabelSelector

RSS: Final[ResourceKey] = ("apps", "replicasets")
RCS: Final[ResourceKey] = ("", "replicationcontrollers")
BURST: Final = 500

Key = tuple[str, str]


@dataclass(frozen=True)
class Replicated:
    """A type managed by this controller: its store and kind, and whether `spec.selector` is
    a plain label map (ReplicationController) rather than a LabelSelector."""

    group: str
    plural: str
    kind: str
    controller_name: str
    map_selector: bool = False

    @property
    def rkey(self) -> ResourceKey:
        return (self.group, self.plural)

    def selector(self, obj: dict[str, Any]) -> LabelSelector | None:
        raw = (obj.get("spec") or {}).get("selector")
        if self.map_selector and isinstance(raw, dict) and raw:
            raw = {"matchLabels": raw}
        return selector_of({"spec": {"selector": raw}})


REPLICA_SETS: Final = Replicated("apps", "replicasets", "ReplicaSet", "replicaset-controller")
REPLICATION_CONTROLLERS: Final = Replicated(
    "", "replicationcontrollers", "ReplicationController", "replication-controller", True
)


def selector_of(obj: dict[str, Any]) -> LabelSelector | None:
    """The object's spec.selector, or None when absent or invalid (selects nothing)."""
    raw = (obj.get("spec") or {}).get("selector")
    if not raw:
        return None
    try:
        return LabelSelector.from_label_selector(raw)
    except ApiError:
        return None


def owner_reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "apiVersion": obj.get("apiVersion") or "apps/v1",
        "kind": obj.get("kind") or "ReplicaSet",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


class Claimer:
    """Adoption and release by selector (upstream's ControllerRefManager), shared by the
    ReplicaSet controller (pods) and the Deployment controller (ReplicaSets)."""

    def __init__(self, ctl: Controller[Any], rkey: ResourceKey, group: str, plural: str) -> None:
        self.ctl = ctl
        self.rkey = rkey
        self.rt = ctl.rt(group, plural)

    async def claim(self, owner: dict[str, Any], selector: LabelSelector) -> list[dict[str, Any]]:
        ns = owner["metadata"].get("namespace", "")
        uid = owner["metadata"]["uid"]
        owner_deleting = bool(owner["metadata"].get("deletionTimestamp"))
        out = []
        for obj in list(self.ctl.core.store.resource(self.rkey).range(ns)):
            meta = obj["metadata"]
            ref = controller_ref(obj)
            matches = selector.matches(meta.get("labels"))
            if ref is not None and ref.get("uid") == uid:
                if matches:
                    out.append(obj)
                elif not meta.get("deletionTimestamp"):
                    await self._set_refs(
                        obj, [r for r in meta.get("ownerReferences") or () if r.get("uid") != uid]
                    )
            elif (
                ref is None and matches and not owner_deleting and not meta.get("deletionTimestamp")
            ):
                refs = [r for r in meta.get("ownerReferences") or () if r.get("uid") != uid] + [
                    owner_reference(owner)
                ]
                adopted = await self._set_refs(obj, refs)
                if adopted is not None:
                    out.append(adopted)
        return out

    async def _set_refs(
        self, obj: dict[str, Any], refs: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        meta = obj["metadata"]
        new_meta = {**meta, "ownerReferences": refs}
        if not refs:
            del new_meta["ownerReferences"]
        try:
            return await self.ctl.core.update(
                self.rt,
                meta.get("namespace", ""),
                meta["name"],
                {**obj, "metadata": new_meta},
                self.ctl.req(),
            )
        except ApiError as err:
            if err.code in (404, 409):
                return None
            raise


class ReplicaSetController(Controller[Key]):
    name = "replicaset-controller"
    workers = 4

    def __init__(self, core: ApiCore, managed: Replicated = REPLICA_SETS) -> None:
        super().__init__(core)
        self.managed = managed
        self.name = managed.controller_name
        self.rs_rt = self.rt(managed.group, managed.plural)
        self.pods_rt = self.rt("", "pods")
        self.pods = Claimer(self, PODS, "", "pods")

    def initial_keys(self) -> Iterable[Key]:
        return [meta_key(rs) for rs in self.core.store.resource(self.managed.rkey).objects.values()]

    def watched(self) -> Collection[ResourceKey]:
        return (self.managed.rkey, PODS)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[Key]:
        if rkey == self.managed.rkey:
            return [] if ev.type == DELETED else [meta_key(ev.obj)]
        if rkey != PODS:
            return []
        keys: list[Key] = []
        ns = ev.obj["metadata"].get("namespace", "")
        for pod in (ev.obj, ev.old):
            if pod is None:
                continue
            ref = controller_ref(pod)
            if ref is not None:
                if ref.get("kind") == self.managed.kind:
                    keys.append((ns, str(ref.get("name"))))
            elif ev.type != DELETED and pod is ev.obj:
                labels = pod["metadata"].get("labels")
                for rs in self.core.store.resource(self.managed.rkey).range(ns):
                    sel = self.managed.selector(rs)
                    if sel is not None and sel.matches(labels):
                        keys.append(meta_key(rs))
        return keys

    async def sync(self, key: Key) -> float | None:
        ns, name = key
        rs = self.core.store.get(self.managed.rkey, key)
        if rs is None:
            return None
        selector = self.managed.selector(rs)
        pods = await self.pods.claim(rs, selector) if selector is not None else []
        error: ApiError | None = None
        if not rs["metadata"].get("deletionTimestamp") and selector is not None:
            active = [p for p in pods if rollout.is_active(p)]
            diff = len(active) - rollout.replicas_of(rs)
            if diff < 0:
                error = await self._create(rs, min(-diff, BURST))
            elif diff > 0:
                await asyncio.gather(
                    *(self._delete(p) for p in rollout.pods_to_delete(active, diff))
                )
        current = self.core.store.get(self.managed.rkey, key)
        if current is None or current["metadata"].get("uid") != rs["metadata"].get("uid"):
            return None
        now = time.time()
        owned = self._owned(current)
        status = rollout.replicaset_status(current, owned, now)
        status["conditions"] = _failure_conditions(status.get("conditions") or [], error)
        if not status["conditions"]:
            del status["conditions"]
        if status != (current.get("status") or {}):
            await self.core.update(
                self.rs_rt,
                ns,
                name,
                {**current, "status": status},
                self.req(),
                subresource="status",
            )
        if error is not None:
            raise error
        min_ready = int((current.get("spec") or {}).get("minReadySeconds") or 0)
        waits = [
            w
            for p in owned
            if rollout.is_active(p) and not rollout.pod_available(p, min_ready, now)
            for w in [rollout.available_in(p, min_ready, now)]
            if w is not None
        ]
        return min(waits) + 0.05 if waits else None

    def _owned(self, rs: dict[str, Any]) -> list[dict[str, Any]]:
        uid = rs["metadata"]["uid"]
        out = []
        for rkey, okey in self.core.store.dependents.get(uid, ()):
            if rkey != PODS:
                continue
            pod = self.core.store.get(rkey, okey)
            ref = controller_ref(pod) if pod is not None else None
            if pod is not None and ref is not None and ref.get("uid") == uid:
                out.append(pod)
        return out

    async def _create(self, rs: dict[str, Any], count: int) -> ApiError | None:
        meta = rs["metadata"]
        template = (rs.get("spec") or {}).get("template") or {}
        tmeta = template.get("metadata") or {}
        pod_meta: dict[str, Any] = {
            "generateName": f"{meta['name']}-",
            "namespace": meta.get("namespace", ""),
            "ownerReferences": [owner_reference(rs)],
        }
        for field in ("labels", "annotations", "finalizers"):
            if tmeta.get(field):
                pod_meta[field] = copy.deepcopy(tmeta[field])
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": pod_meta,
            "spec": copy.deepcopy(template.get("spec") or {}),
        }

        async def one() -> ApiError | None:
            try:
                await self.core.create(self.pods_rt, meta.get("namespace", ""), body, self.req())
                return None
            except ApiError as err:
                return err

        errors = [e for e in await asyncio.gather(*(one() for _ in range(count))) if e]
        return errors[0] if errors else None

    async def _delete(self, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            await self.core.delete(
                self.pods_rt,
                meta.get("namespace", ""),
                meta["name"],
                {"preconditions": {"uid": meta.get("uid")}},
                self.req(),
            )
        except ApiError as err:
            if err.code not in (404, 409):
                raise


def _failure_conditions(
    conditions: list[dict[str, Any]], error: ApiError | None
) -> list[dict[str, Any]]:
    others = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    if error is None:
        return others
    current = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if current is not None and current.get("message") == error.message:
        return conditions
    return [
        *others,
        {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreate",
            "message": error.message,
            "lastTransitionTime": now_rfc3339(),
        },
    ]
