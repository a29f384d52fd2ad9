"""Garbage collection by ownerReferences, and namespace teardown.

Mirrors kube-controller-manager's garbage collector:
- Background: once every owner of an object is gone, the object is deleted.
- Foreground: an owner with the `foregroundDeletion` finalizer has its dependents deleted
  first; the finalizer goes when no dependent with `blockOwnerDeletion` remains.
- Orphan: an owner with the `orphan` finalizer has itself removed from its dependents'
  ownerReferences, then the finalizer goes.
and the namespace controller: a namespace being deleted is emptied, then removed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request, component_request
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.machinery.errors import ApiError
from kubeutil.aio import cancel_and_wait

log = structlog.get_logger("sim.gc")

NAMESPACES: ResourceKey = ("", "namespaces")


class GarbageCollector:
    def __init__(self, core: ApiCore) -> None:
        self.core = core
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        core.store.listeners.append(self._on_event)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="sim-gc")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    def _req(self) -> Request:
        return component_request("generic-garbage-collector")

    def _on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        meta = ev.obj["metadata"]
        if ev.type == DELETED:
            uid = meta.get("uid")
            # The dependents of a vanished owner may now be garbage.
            for dep in list(self.core.store.dependents.get(uid, ())) if uid else ():
                self._queue.put_nowait(("dependent", dep))
            # A foreground-deleting owner may be waiting for this object.
            for ref in meta.get("ownerReferences") or ():
                self._queue.put_nowait(("owner", ref.get("uid")))
            return
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or ()
            if "orphan" in finalizers or "foregroundDeletion" in finalizers:
                self._queue.put_nowait(("owner", meta.get("uid")))
            if rkey == NAMESPACES:
                self._queue.put_nowait(("namespace", meta["name"]))
        if ev.type == "ADDED" and meta.get("ownerReferences"):
            okey = (meta.get("namespace", ""), meta["name"])
            self._queue.put_nowait(("dependent", (rkey, okey)))

    async def _run(self) -> None:
        while True:
            kind, item = await self._queue.get()
            try:
                if kind == "dependent":
                    await self._check_dependent(*item)
                elif kind == "owner":
                    await self._check_owner(item)
                elif kind == "namespace":
                    await self._check_namespace(item)
            except ApiError as err:
                if err.code not in (404, 409):
                    log.warning("gc action failed", item=str(item), error=str(err))
                if err.code == 409:
                    self._queue.put_nowait((kind, item))
            except Exception:  # keep collecting whatever one object does
                log.exception("gc error", item=str(item))

    def _rt(self, rkey: ResourceKey) -> Any:
        for rt in self.core.registry.all():
            if rt.key == rkey:
                return rt
        return None

    async def _check_dependent(self, rkey: ResourceKey, okey: tuple[str, str]) -> None:
        obj = self.core.store.get(rkey, okey)
        rt = self._rt(rkey)
        if obj is None or rt is None:
            return
        refs = obj["metadata"].get("ownerReferences") or []
        if not refs:
            return
        alive = []
        waiting_foreground = False
        for ref in refs:
            found = self.core.store.get_by_uid(ref.get("uid", ""))
            if found is None:
                continue
            owner = found[1]
            finalizers = owner["metadata"].get("finalizers") or []
            if owner["metadata"].get("deletionTimestamp") and "foregroundDeletion" in finalizers:
                waiting_foreground = True
                continue
            alive.append(ref)
        if alive:
            if len(alive) != len(refs) and not waiting_foreground:
                # Drop references to owners that no longer exist.
                new = {**obj, "metadata": {**obj["metadata"], "ownerReferences": alive}}
                await self.core.update(rt, okey[0], okey[1], new, self._req())
            return
        if obj["metadata"].get("deletionTimestamp") and not waiting_foreground:
            return
        has_deps = bool(self.core.store.dependents.get(obj["metadata"].get("uid", "")))
        policy = "Foreground" if waiting_foreground and has_deps else "Background"
        await self.core.delete(rt, okey[0], okey[1], {"propagationPolicy": policy}, self._req())

    async def _check_owner(self, uid: str | None) -> None:
        if not uid:
            return
        found = self.core.store.get_by_uid(uid)
        if found is None:
            return
        rkey, owner = found
        rt = self._rt(rkey)
        meta = owner["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if not meta.get("deletionTimestamp") or rt is None:
            return
        deps = list(self.core.store.dependents.get(uid, ()))
        if "orphan" in finalizers:
            for drkey, dokey in deps:
                dep = self.core.store.get(drkey, dokey)
                drt = self._rt(drkey)
                if dep is None or drt is None:
                    continue
                refs = [
                    r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid
                ]
                new = {**dep, "metadata": {**dep["metadata"], "ownerReferences": refs}}
                if not refs:
                    new["metadata"].pop("ownerReferences")
                await self.core.update(drt, dokey[0], dokey[1], new, self._req())
            finalizers.remove("orphan")
            await self._set_finalizers(rt, owner, finalizers)
            return
        if "foregroundDeletion" in finalizers:
            blocking = False
            for drkey, dokey in deps:
                dep = self.core.store.get(drkey, dokey)
                if dep is None:
                    continue
                ref: dict[str, Any] = next(
                    (
                        r
                        for r in dep["metadata"].get("ownerReferences") or []
                        if r.get("uid") == uid
                    ),
                    {},
                )
                if ref.get("blockOwnerDeletion"):
                    blocking = True
                if not dep["metadata"].get("deletionTimestamp"):
                    await self._check_dependent(drkey, dokey)
            if not blocking:
                finalizers.remove("foregroundDeletion")
                await self._set_finalizers(rt, owner, finalizers)

    async def _set_finalizers(self, rt: Any, obj: dict[str, Any], finalizers: list[str]) -> None:
        meta = {**obj["metadata"], "finalizers": finalizers}
        if not finalizers:
            meta.pop("finalizers")
        await self.core.update(
            rt, meta.get("namespace", ""), meta["name"], {**obj, "metadata": meta}, self._req()
        )

    async def _check_namespace(self, name: str) -> None:
        ns_rt = self.core.registry.get("", "v1", "namespaces")
        ns = self.core.store.get(NAMESPACES, ("", name))
        if ns is None or ns_rt is None or not ns["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for rt in list(self.core.registry.all()):
            if not rt.namespaced:
                continue
            rs = self.core.store.resources.get(rt.key)
            if rs is None:
                continue
            items = list(rs.range(name))
            for obj in items:
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(ApiError):
                        await self.core.delete(
                            rt,
                            name,
                            obj["metadata"]["name"],
                            {"propagationPolicy": "Background"},
                            self._req(),
                        )
        if remaining:
            # Check again once the content is gone (pods may wait for their kubelet).
            asyncio.get_running_loop().call_later(0.2, self._queue.put_nowait, ("namespace", name))
            return
        spec = {**(ns.get("spec") or {}), "finalizers": []}
        final = {**ns, "spec": spec}
        await self.core.update(ns_rt, "", name, final, self._req(), subresource="finalize")
        current = self.core.store.get(NAMESPACES, ("", name))
        if current is not None and not current["metadata"].get("finalizers"):
            self.core.force_remove(ns_rt, current)
