"""PodDisruptionBudgets (policy/v1): the disruption controller's status, and the eviction
subresource that honours it, as kube-controller-manager and kube-apiserver do.

Status (`pdb_status`): the pods of the PDB's namespace its selector matches (`{}` matches
all of them in policy/v1); `expectedPods` and `desiredHealthy` from `minAvailable` (a number:
that many, the pods counted as they are; a percentage: of the controllers' scale, rounded up)
or `maxUnavailable` (of the controllers' scale, rounded up, taken off it), where the scale is
the sum of `spec.replicas` of the pods' controllers (a ReplicaSet owned by a Deployment counts
as the Deployment); `currentHealthy` the Ready pods not being deleted and not recently
evicted (`disruptedPods`, kept until the pod is seen going or for 2 minutes);
`disruptionsAllowed` = currentHealthy - desiredHealthy (at least 0); condition
`DisruptionAllowed` (SufficientPods / InsufficientPods). A pod without a controller that
has a scale, under a percentage or maxUnavailable, makes the status fail safe: no
disruption allowed (reason SyncFailed).

Eviction (`evict`, behind `POST pods/<name>/eviction`): a pod that is Pending, finished or
already being deleted is deleted at once; so is one no PDB covers. More than one PDB: 500.
A not-Ready pod is deleted without touching the budget while the budget is met
(`unhealthyPodEvictionPolicy: AlwaysAllow` always). Else, if the PDB's status is behind its
generation or allows no disruption: 429 TooManyRequests, `Cannot evict pod as it would
violate the pod's disruption budget.`, with a `DisruptionBudget` cause saying how many
healthy pods the budget needs and has; otherwise the budget is decremented, the pod recorded
in `disruptedPods`, and the pod deleted with the eviction's deleteOptions.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.core.store import DELETED, ResourceKey, Store, WatchEvent
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.base.controller import PODS, Controller, controller_ref, meta_key
from kubesim.clock import now_rfc3339, parse_rfc3339
from kubesim.controllers.rollout import IntOrPercentError, pod_ready, scaled_value
from kubesim.machinery.errors import ApiError, Cause, not_found
from kubesim.machinery.selectors import LabelSelector

PDBS: Final[ResourceKey] = ("policy", "poddisruptionbudgets")
DELETION_TIMEOUT: Final = 120.0  # seconds a disrupted pod is awaited (upstream's DeletionTimeout)
_SCALED: Final = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("", "replicationcontrollers"),
    }
)

# ---------------------------------------------------------------------------------------------
# Pure computation


def pdb_selector(pdb: Mapping[str, Any]) -> LabelSelector | None:
    raw = (pdb.get("spec") or {}).get("selector")
    if raw is None:
        return None
    try:
        return LabelSelector.from_label_selector(raw)
    except ApiError:
        return None


def pdb_matches(pdb: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    sel = pdb_selector(pdb)
    meta = pod.get("metadata") or {}
    return (
        sel is not None
        and meta.get("namespace", "") == (pdb.get("metadata") or {}).get("namespace", "")
        and sel.matches(meta.get("labels"))
    )


def desired_and_expected(
    pdb: Mapping[str, Any], pod_count: int, scale: int | None
) -> tuple[int, int]:
    """(desiredHealthy, expectedPods); `scale` is the controllers' total, needed for
    percentages and maxUnavailable (ValueError when it is None then)."""
    spec = pdb.get("spec") or {}
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None:
        if scale is None:
            raise ValueError("found no controllers with a scale for the budget's pods")
        unavailable = scaled_value(max_unavailable, scale, True)
        return max(scale - unavailable, 0), scale
    if min_available is not None:
        if isinstance(min_available, int) and not isinstance(min_available, bool):
            return min_available, pod_count
        if scale is None:
            raise ValueError("found no controllers with a scale for the budget's pods")
        return scaled_value(min_available, scale, True), scale
    return 0, 0


def pdb_status(
    pdb: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    scale: int | None,
    now_ts: float,
) -> tuple[dict[str, Any], float | None]:
    """The PDB's next status and, when a disrupted pod's record will expire, in how many
    seconds to look again."""
    old = pdb.get("status") or {}
    generation = int((pdb.get("metadata") or {}).get("generation") or 1)
    disrupted_old = old.get("disruptedPods") or {}
    disrupted: dict[str, str] = {}
    recheck: float | None = None
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = str(meta.get("name") or "")
        if meta.get("deletionTimestamp") or name not in disrupted_old:
            continue
        try:
            since = parse_rfc3339(str(disrupted_old[name]))
        except ValueError:
            continue
        left = since + DELETION_TIMEOUT - now_ts
        if left > 0:
            disrupted[name] = disrupted_old[name]
            recheck = left if recheck is None else min(recheck, left)
    healthy = sum(
        1
        for p in pods
        if not (p.get("metadata") or {}).get("deletionTimestamp")
        and str((p.get("metadata") or {}).get("name")) not in disrupted
        and pod_ready(p)
    )
    now = now_rfc3339(now_ts)
    try:
        desired, expected = desired_and_expected(pdb, len(pods), scale)
        failure = ""
    except (ValueError, IntOrPercentError) as exc:
        desired, expected, failure = 0, 0, str(exc)
    allowed = 0 if failure or expected <= 0 else max(healthy - desired, 0)
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": allowed,
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    if failure:
        cond = ("False", "SyncFailed", failure)
    elif allowed > 0:
        cond = ("True", "SufficientPods", "")
    else:
        cond = ("False", "InsufficientPods", "")
    status["conditions"] = [_condition(old, cond, generation, now)]
    return status, recheck


def _condition(
    old: Mapping[str, Any], cond: tuple[str, str, str], generation: int, now: str
) -> dict[str, Any]:
    current = next(
        (c for c in old.get("conditions") or () if c.get("type") == "DisruptionAllowed"), None
    )
    status, reason, message = cond
    since = now
    if current is not None and current.get("status") == status:
        since = str(current.get("lastTransitionTime") or now)
    return {
        "type": "DisruptionAllowed",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }


def budget_exhausted(pdb: Mapping[str, Any]) -> ApiError | None:
    """The error an eviction against this PDB meets now (upstream's checkAndDecrement), or
    None when a disruption is allowed."""
    meta = pdb.get("metadata") or {}
    status = pdb.get("status") or {}
    name = str(meta.get("name") or "")
    message = "Cannot evict pod as it would violate the pod's disruption budget."
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 1):
        return ApiError(
            429,
            "TooManyRequests",
            message,
            causes=[
                Cause(
                    "DisruptionBudget",
                    f"The disruption budget {name} is still being processed by the server.",
                )
            ],
        )
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        return ApiError(403, "Forbidden", "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > 2000:
        return ApiError(
            403,
            "Forbidden",
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
    if allowed == 0:
        return ApiError(
            429,
            "TooManyRequests",
            message,
            causes=[
                Cause(
                    "DisruptionBudget",
                    f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} "
                    f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently",
                )
            ],
        )
    return None


def can_ignore_pdb(pod: Mapping[str, Any]) -> bool:
    """Pods an eviction deletes without consulting budgets (upstream's canIgnorePDB)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp")
    )


# ---------------------------------------------------------------------------------------------
# Scale of the pods' controllers


def controllers_scale(
    store: Store, core_registry: Registry, pods: Iterable[Mapping[str, Any]]
) -> int | None:
    """Sum of the replicas of the pods' distinct controllers; None if a pod has none with a
    scale (a bare pod, a Job)."""
    seen: dict[str, int] = {}
    for pod in pods:
        ref = controller_ref(dict(pod))
        if ref is None:
            return None
        ns = (pod.get("metadata") or {}).get("namespace", "")
        found = _scale_of(store, core_registry, ns, ref)
        if found is None:
            return None
        uid, replicas = found
        seen[uid] = replicas
    return sum(seen.values())


def _scale_of(
    store: Store, registry: Registry, ns: str, ref: Mapping[str, Any]
) -> tuple[str, int] | None:
    group, _, version = str(ref.get("apiVersion") or "").rpartition("/")
    rt = registry.by_kind(group, version, str(ref.get("kind") or ""))
    if rt is None:
        return None
    obj = store.get(rt.key, (ns, str(ref.get("name"))))
    if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
        return None
    if rt.key == ("apps", "replicasets"):
        owner = controller_ref(obj)
        if owner is not None and owner.get("kind") == "Deployment":
            d = store.get(("apps", "deployments"), (ns, str(owner.get("name"))))
            if d is not None and d["metadata"].get("uid") == owner.get("uid"):
                return str(owner["uid"]), int((d.get("spec") or {}).get("replicas", 1) or 0)
    if rt.key not in _SCALED and "scale" not in rt.subresources:
        return None
    replicas = (obj.get("spec") or {}).get("replicas")
    return str(obj["metadata"]["uid"]), int(1 if replicas is None else replicas)


# ---------------------------------------------------------------------------------------------
# The controller

Key = tuple[str, str]


class DisruptionController(Controller[Key]):
    name = "disruption-controller"
    workers = 1

    def __init__(self, core: ApiCore) -> None:
        super().__init__(core)
        self.pdb_rt = self.rt("policy", "poddisruptionbudgets")

    def initial_keys(self) -> Iterable[Key]:
        return [meta_key(p) for p in self.core.store.resource(PDBS).objects.values()]

    def watched(self) -> Collection[ResourceKey]:
        return (PDBS, PODS, *_SCALED)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[Key]:
        if rkey == PDBS:
            return [] if ev.type == DELETED else [meta_key(ev.obj)]
        ns = ev.obj["metadata"].get("namespace", "")
        pdbs = self.core.store.resources.get(PDBS)
        if pdbs is None or not pdbs.objects:
            return []
        if rkey == PODS:
            return [
                meta_key(p)
                for p in pdbs.range(ns)
                if pdb_matches(p, ev.obj) or (ev.old is not None and pdb_matches(p, ev.old))
            ]
        if rkey in _SCALED:
            return [meta_key(p) for p in pdbs.range(ns)]
        return []

    async def sync(self, key: Key) -> float | None:
        pdb = self.core.store.get(PDBS, key)
        if pdb is None:
            return None
        pods = [p for p in self.core.store.resource(PODS).range(key[0]) if pdb_matches(pdb, p)]
        scale = controllers_scale(self.core.store, self.core.registry, pods)
        status, recheck = pdb_status(pdb, pods, scale, time.time())
        old = pdb.get("status") or {}
        if _without_times(status) != _without_times(old):
            await self.core.update(
                self.pdb_rt,
                key[0],
                key[1],
                {**pdb, "status": status},
                self.req(),
                subresource="status",
            )
        return recheck


def _without_times(status: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(status)
    out["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions") or ()
    ]
    return out


# ---------------------------------------------------------------------------------------------
# Eviction


async def evict(
    core: ApiCore, pods_rt: ResourceType, namespace: str, name: str, body: Any, req: Request
) -> None:
    """`POST pods/<name>/eviction`: delete the pod if the budgets allow it, else raise the
    ApiError kube-apiserver answers with."""
    options = dict(((body or {}) if isinstance(body, dict) else {}).get("deleteOptions") or {})
    pdb_rt = core.registry.get("policy", "v1", "poddisruptionbudgets")
    assert pdb_rt is not None
    for _attempt in range(5):
        pod = core.store.get(PODS, (namespace, name))
        if pod is None:
            raise not_found("", "pods", name)
        if can_ignore_pdb(pod):
            await core.delete(pods_rt, namespace, name, options, req)
            return
        pdbs = [p for p in core.store.resource(PDBS).range(namespace) if pdb_matches(p, pod)]
        if len(pdbs) > 1:
            raise ApiError(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction "
                "subresource does not support.",
            )
        if not pdbs:
            await core.delete(pods_rt, namespace, name, options, req)
            return
        pdb = pdbs[0]
        spec = pdb.get("spec") or {}
        status = pdb.get("status") or {}
        if not pod_ready(pod):
            if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow" or (
                int(status.get("currentHealthy") or 0) >= int(status.get("desiredHealthy") or 0)
                and int(status.get("desiredHealthy") or 0) > 0
            ):
                await core.delete(pods_rt, namespace, name, options, req)
                return
        error = budget_exhausted(pdb)
        if error is not None:
            raise error
        if req.dry_run:
            await core.delete(pods_rt, namespace, name, options, req)
            return
        allowed = int(status.get("disruptionsAllowed") or 0) - 1
        new_status = {
            **status,
            "disruptionsAllowed": allowed,
            "disruptedPods": {**(status.get("disruptedPods") or {}), name: now_rfc3339()},
        }
        if allowed == 0:
            new_status["conditions"] = [
                {
                    **c,
                    "status": "False",
                    "reason": "InsufficientPods",
                    "lastTransitionTime": now_rfc3339(),
                }
                if c.get("type") == "DisruptionAllowed" and c.get("status") != "False"
                else c
                for c in status.get("conditions") or ()
            ]
        pmeta = pdb["metadata"]
        try:
            await core.update(
                pdb_rt,
                namespace,
                pmeta["name"],
                {**pdb, "status": new_status},
                Request(user=req.user, field_manager=req.field_manager),
                subresource="status",
            )
        except ApiError as err:
            if err.code == 409:
                continue
            raise
        await core.delete(pods_rt, namespace, name, options, req)
        return
    raise ApiError(429, "TooManyRequests", "too many concurrent evictions; try again")
