"""The simulated Deployment controller (apps/v1, as kube-controller-manager's).

What `kubectl rollout status|history|undo|restart` and Helm rely on:

- ReplicaSets named `<deployment>-<pod-template-hash>`, the hash label on their selector,
  template and labels, a controller owner reference, the Deployment's annotations (but
  `last-applied-configuration` and the rollout ones), `deployment.kubernetes.io/revision`
  (reused ReplicaSets get the next revision and `revision-history`), `desired-replicas` and
  `max-replicas`. The Deployment carries its current revision annotation too.
- The new ReplicaSet is the oldest one whose template equals the Deployment's but for the
  hash label, so `rollout undo` (which writes an old template back) brings the old
  ReplicaSet back as the newest revision.
- RollingUpdate (`maxSurge` rounded up, `maxUnavailable` rounded down, 25% each by default)
  and Recreate (old pods all gone before the new ReplicaSet is created), one step per sync
  as `rollout.rolling_step` / `recreate_step` decide; `minReadySeconds` through the
  ReplicaSets' availableReplicas; `spec.paused`; `revisionHistoryLimit` once a rollout is
  complete; adoption and release of ReplicaSets by selector.
- Status: replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas,
  observedGeneration, and the conditions Available and Progressing with upstream's reasons
  (see `rollout.deployment_status`), including ProgressDeadlineExceeded.

Not modelled: proportional scaling of several active ReplicaSets during a rollout (a scale
change mid-rollout converges through the rolling steps instead), Events.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Collection, Iterable
from typing import Any, Final

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.base.controller import PODS, Controller, controller_ref, meta_key
from kubesim.clock import now_rfc3339
from kubesim.controllers import rollout
from kubesim.controllers.replicaset import RSS, Claimer, owner_reference, selector_of
from kubesim.machinery.errors import ApiError

DEPLOYMENTS: Final[ResourceKey] = ("apps", "deployments")

Key = tuple[str, str]


class DeploymentController(Controller[Key]):
    name = "deployment-controller"
    workers = 2

    def __init__(self, core: ApiCore) -> None:
        super().__init__(core)
        self.deploy_rt = self.rt("apps", "deployments")
        self.rs_rt = self.rt("apps", "replicasets")
        self.rss = Claimer(self, RSS, "apps", "replicasets")

    def initial_keys(self) -> Iterable[Key]:
        return [meta_key(d) for d in self.core.store.resource(DEPLOYMENTS).objects.values()]

    def watched(self) -> Collection[ResourceKey]:
        return (DEPLOYMENTS, RSS, PODS)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[Key]:
        if rkey == DEPLOYMENTS:
            return [] if ev.type == DELETED else [meta_key(ev.obj)]
        ns = ev.obj["metadata"].get("namespace", "")
        if rkey == RSS:
            keys = []
            for rs in (ev.obj, ev.old):
                if rs is None:
                    continue
                ref = controller_ref(rs)
                if ref is not None and ref.get("kind") == "Deployment":
                    keys.append((ns, str(ref.get("name"))))
                elif ref is None and rs is ev.obj and ev.type != DELETED:
                    labels = rs["metadata"].get("labels")
                    for d in self.core.store.resource(DEPLOYMENTS).range(ns):
                        sel = selector_of(d)
                        if sel is not None and sel.matches(labels):
                            keys.append(meta_key(d))
            return keys
        if rkey == PODS and ev.type == DELETED:
            # Recreate waits for old pods to be gone, not merely terminating.
            ref = controller_ref(ev.obj)
            if ref is not None and ref.get("kind") == "ReplicaSet":
                rs = self.core.store.get(RSS, (ns, str(ref.get("name"))))
                owner = controller_ref(rs) if rs is not None else None
                if owner is not None and owner.get("kind") == "Deployment":
                    return [(ns, str(owner.get("name")))]
        return []

    # ------------------------------------------------------------------ sync

    async def sync(self, key: Key) -> float | None:
        d = self.core.store.get(DEPLOYMENTS, key)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return None
        selector = selector_of(d)
        if selector is None:
            return None
        rss = await self.rss.claim(d, selector)
        template = (d.get("spec") or {}).get("template") or {}
        rss.sort(key=lambda r: (rollout.RSState.of(r).created, r["metadata"]["name"]))
        new = next(
            (
                r
                for r in rss
                if rollout.equal_ignore_hash(r["spec"].get("template") or {}, template)
            ),
            None,
        )
        olds = [r for r in rss if r is not new]
        paused = bool((d.get("spec") or {}).get("paused"))
        event = ""
        changed = False
        if not paused:
            new, event = await self._new_replicaset(d, new, olds)
            if rollout.strategy_type(d) == "Recreate":
                changed = await self._recreate(d, new, olds)
                if new is None and not changed and not self._old_pods_running(olds):
                    new, event = await self._create_new(d, olds, rollout.replicas_of(d))
                    changed = True
            else:
                changed = await self._rolling(d, new, olds)
        return await self._finish(key, event, changed)

    async def _finish(self, key: Key, event: str, changed: bool) -> float | None:
        d = self.core.store.get(DEPLOYMENTS, key)
        if d is None:
            return None
        rss = [
            r
            for r in self.core.store.resource(RSS).range(key[0])
            if (controller_ref(r) or {}).get("uid") == d["metadata"]["uid"]
        ]
        template = (d.get("spec") or {}).get("template") or {}
        rss.sort(key=lambda r: (rollout.RSState.of(r).created, r["metadata"]["name"]))
        new = next(
            (
                r
                for r in rss
                if rollout.equal_ignore_hash(r["spec"].get("template") or {}, template)
            ),
            None,
        )
        olds = [r for r in rss if r is not new]
        now = time.time()
        status = rollout.deployment_status(
            d,
            rollout.RSState.of(new) if new is not None else None,
            [rollout.RSState.of(r) for r in olds],
            now_rfc3339(now),
            now,
            new_rs_event=event,
        )
        if new is not None:
            revision = str(rollout.revision_of(new))
            annotations = d["metadata"].get("annotations") or {}
            if annotations.get(rollout.REVISION) != revision:
                meta = {**d["metadata"], "annotations": {**annotations, rollout.REVISION: revision}}
                d = await self.core.update(
                    self.deploy_rt, key[0], key[1], {**d, "metadata": meta}, self.req()
                )
        if status != (d.get("status") or {}):
            await self.core.update(
                self.deploy_rt,
                key[0],
                key[1],
                {**d, "status": status},
                self.req(),
                subresource="status",
            )
        if (
            not changed
            and not (d.get("spec") or {}).get("paused")
            and rollout.is_complete(d, status)
        ):
            limit = (d.get("spec") or {}).get("revisionHistoryLimit")
            for name in rollout.history_to_delete(olds, 10 if limit is None else int(limit)):
                try:
                    await self.core.delete(self.rs_rt, key[0], name, {}, self.req())
                except ApiError as err:
                    if err.code != 404:
                        raise
            return None
        return rollout.progress_deadline_left({**d, "status": status}, now)

    # ------------------------------------------------------------------ new ReplicaSet

    async def _new_replicaset(
        self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]]
    ) -> tuple[dict[str, Any] | None, str]:
        """Bring an existing new ReplicaSet's revision, annotations and minReadySeconds up to
        date, or (RollingUpdate only) create it."""
        revision = max((rollout.revision_of(r) for r in olds), default=0) + 1
        if new is None:
            if rollout.strategy_type(d) == "Recreate":
                return None, ""
            surge, _ = rollout.fenceposts(d)
            replicas = rollout.new_rs_replicas(
                rollout.replicas_of(d), surge, None, [rollout.RSState.of(r) for r in olds], True
            )
            return await self._create_new(d, olds, replicas)
        meta = new["metadata"]
        current = rollout.revision_of(new)
        annotations = rollout.rs_annotations(
            d, max(current, revision), meta.get("annotations") or {}
        )
        # desired/max replicas follow scaling, not this sync
        for k in (rollout.DESIRED_REPLICAS, rollout.MAX_REPLICAS):
            if k in (meta.get("annotations") or {}):
                annotations[k] = meta["annotations"][k]
        spec = new.get("spec") or {}
        min_ready = (d.get("spec") or {}).get("minReadySeconds") or 0
        if (
            annotations == (meta.get("annotations") or {})
            and (spec.get("minReadySeconds") or 0) == min_ready
        ):
            return new, rollout.FOUND_NEW_RS
        body = {
            **new,
            "metadata": {**meta, "annotations": annotations},
            "spec": {**spec, "minReadySeconds": min_ready},
        }
        updated = await self.core.update(
            self.rs_rt, meta.get("namespace", ""), meta["name"], body, self.req()
        )
        return updated, rollout.FOUND_NEW_RS

    async def _create_new(
        self, d: dict[str, Any], olds: list[dict[str, Any]], replicas: int
    ) -> tuple[dict[str, Any] | None, str]:
        meta = d["metadata"]
        ns = meta.get("namespace", "")
        spec = d.get("spec") or {}
        collisions = (d.get("status") or {}).get("collisionCount")
        template = copy.deepcopy(spec.get("template") or {})
        pod_hash = rollout.template_hash(template, collisions)
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), rollout.HASH_LABEL: pod_hash}
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {
            **(selector.get("matchLabels") or {}),
            rollout.HASH_LABEL: pod_hash,
        }
        revision = max((rollout.revision_of(r) for r in olds), default=0) + 1
        annotations = rollout.rs_annotations(d, revision)
        annotations[rollout.DESIRED_REPLICAS] = str(rollout.replicas_of(d))
        body: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{pod_hash}",
                "namespace": ns,
                "labels": dict(tmeta["labels"]),
                "annotations": annotations,
                "ownerReferences": [owner_reference(d)],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": spec.get("minReadySeconds") or 0,
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = await self.core.create(self.rs_rt, ns, body, self.req())
        except ApiError as err:
            if err.code != 409 or err.reason != "AlreadyExists":
                raise
            existing = self.core.store.get(RSS, (ns, f"{meta['name']}-{pod_hash}"))
            if (
                existing is not None
                and (controller_ref(existing) or {}).get("uid") == meta["uid"]
                and rollout.equal_ignore_hash(
                    existing["spec"].get("template") or {}, spec.get("template") or {}
                )
            ):
                return existing, rollout.FOUND_NEW_RS
            # A hash collision: count it, so the next hash differs (upstream's collisionCount).
            status = {**(d.get("status") or {}), "collisionCount": int(collisions or 0) + 1}
            await self.core.update(
                self.deploy_rt,
                ns,
                meta["name"],
                {**d, "status": status},
                self.req(),
                subresource="status",
            )
            raise ApiError(409, "Conflict", "pod-template-hash collision") from None
        return created, rollout.NEW_RS_CREATED

    # ------------------------------------------------------------------ strategies

    async def _scale(self, d: dict[str, Any], rs: dict[str, Any], replicas: int) -> None:
        meta = rs["metadata"]
        annotations = {
            **(meta.get("annotations") or {}),
            rollout.DESIRED_REPLICAS: str(rollout.replicas_of(d)),
            rollout.MAX_REPLICAS: str(rollout.replicas_of(d) + rollout.fenceposts(d)[0]),
        }
        body = {
            **rs,
            "metadata": {**meta, "annotations": annotations},
            "spec": {**(rs.get("spec") or {}), "replicas": replicas},
        }
        await self.core.update(
            self.rs_rt, meta.get("namespace", ""), meta["name"], body, self.req()
        )

    async def _apply(
        self, d: dict[str, Any], rss: list[dict[str, Any]], changes: dict[str, int]
    ) -> bool:
        by_name = {r["metadata"]["name"]: r for r in rss}
        for name, replicas in changes.items():
            if name in by_name:
                await self._scale(d, by_name[name], replicas)
        return bool(changes)

    async def _rolling(
        self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]]
    ) -> bool:
        if new is None:
            return False
        surge, unavailable = rollout.fenceposts(d)
        changes = rollout.rolling_step(
            rollout.replicas_of(d),
            surge,
            unavailable,
            rollout.RSState.of(new),
            [rollout.RSState.of(r) for r in olds],
        )
        return await self._apply(d, [new, *olds], changes)

    def _old_pods_running(self, olds: list[dict[str, Any]]) -> bool:
        store = self.core.store
        for rs in olds:
            if int((rs.get("status") or {}).get("replicas") or 0) > 0:
                return True
            for rkey, okey in store.dependents.get(rs["metadata"]["uid"], ()):
                pod = store.get(rkey, okey) if rkey == PODS else None
                if pod is not None and (pod.get("status") or {}).get("phase") not in (
                    "Succeeded",
                    "Failed",
                ):
                    return True
        return False

    async def _recreate(
        self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]]
    ) -> bool:
        changes, _ = rollout.recreate_step(
            rollout.replicas_of(d),
            rollout.RSState.of(new) if new is not None else None,
            [rollout.RSState.of(r) for r in olds],
            self._old_pods_running(olds),
        )
        return await self._apply(d, [*([new] if new else []), *olds], changes)
