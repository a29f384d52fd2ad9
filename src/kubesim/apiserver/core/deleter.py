"""The last step of every write (commit or removal, which the object hooks see) and DELETE:
preconditions, admission, then what `deletion.py` decides - removed at once, or marked with
a deletionTimestamp while finalizers or a pod's grace period hold it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesim.apiserver.core import deletion, reads
from kubesim.apiserver.core.objects import copy_meta
from kubesim.apiserver.core.request import Admission, AdmissionAttributes, ObjectHooks, Request
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import ApiError, not_found
from kubesim.machinery.selectors import FieldSelector, LabelSelector

__all__ = ["Deleter", "commit", "remove"]


def commit(
    store: Store,
    hooks: Sequence[ObjectHooks],
    rt: ResourceType,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
) -> dict[str, Any]:
    """Store `obj` at a new resourceVersion; the hooks see the write."""
    rv = store.next_rv()
    obj["metadata"]["resourceVersion"] = str(rv)
    store.put(rt.key, obj, rv)
    for hook in hooks:
        hook.after_write(rt, obj, old)
    return obj


def remove(
    store: Store, hooks: Sequence[ObjectHooks], rt: ResourceType, obj: dict[str, Any]
) -> dict[str, Any]:
    """Remove `obj` from the store at a new resourceVersion; the hooks see it go."""
    rv = store.next_rv()
    obj = copy_meta(obj)
    obj["metadata"]["resourceVersion"] = str(rv)
    store.remove(rt.key, obj, rv)
    for hook in hooks:
        hook.after_write(rt, None, obj)
    return obj


class Deleter:
    """DELETE and DELETE collection over `store`, admitted by `admission`."""

    def __init__(
        self,
        store: Store,
        hooks: Sequence[ObjectHooks],
        admission: Admission | None,
        graceful_pod_deletion: bool,
    ) -> None:
        self.store = store
        self.hooks = hooks
        self.admission = admission
        self.graceful_pod_deletion = graceful_pod_deletion

    def blocked(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        return deletion.deletion_blocked(rt, obj, self.graceful_pod_deletion)

    async def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: dict[str, Any] | None = None,
        req: Request | None = None,
    ) -> dict[str, Any]:
        """Delete (`deletion.py` decides what that does to the object): removed at once, or
        marked with a deletionTimestamp while finalizers or a pod's grace period hold it."""
        req = req or Request()
        options = options or {}
        namespace = namespace if rt.namespaced else ""
        obj = self.store.get(rt.key, (namespace, name))
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        deletion.check_preconditions(rt, name, obj, options)
        policy = deletion.propagation_policy(rt, name, options)
        if self.admission is not None:
            attrs = AdmissionAttributes(rt, "", namespace, name, "DELETE", req, options)
            await self.admission.validate(attrs, None, obj)
        if req.dry_run:
            return obj
        has_dependents = bool(self.store.dependents.get(obj["metadata"].get("uid", "")))
        new = deletion.mark_deleted(
            rt,
            obj,
            policy,
            has_dependents,
            options.get("gracePeriodSeconds"),
            self.graceful_pod_deletion,
        )
        if self.blocked(rt, new):
            if new == obj:
                return obj
            return commit(self.store, self.hooks, rt, new, obj)
        return remove(self.store, self.hooks, rt, new)

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        options: dict[str, Any] | None = None,
        req: Request | None = None,
    ) -> list[dict[str, Any]]:
        result = reads.list_objects(self.store, rt, namespace, labels, fields)
        deleted = []
        for obj in result.items:
            meta = obj["metadata"]
            try:
                deleted.append(
                    await self.delete(rt, meta.get("namespace", ""), meta["name"], options, req)
                )
            except ApiError as err:
                if err.code != 404:
                    raise
        return deleted

    def force_remove(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Remove at once, whatever the finalizers: for a kubelet ending a pod's grace period."""
        if self.store.get(rt.key, (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])):
            remove(self.store, self.hooks, rt, obj)
