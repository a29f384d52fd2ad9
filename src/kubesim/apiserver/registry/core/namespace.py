"""core/v1 Namespace: the metadata.name label, the kubernetes finalizer, phase Active /
Terminating; only the finalize subresource changes the spec."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.columns import age, name
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy

TYPE = ResourceType(
    "",
    "v1",
    "Namespace",
    "namespaces",
    False,
    short_names=("ns",),
    subresources=frozenset(("status", "finalize")),
)


class NamespaceStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
        if subresource != "finalize":
            obj["spec"] = old.get("spec", {})
        if old["metadata"].get("deletionTimestamp"):
            obj["status"] = {"phase": "Terminating"}
        return obj


RESOURCE = Resource(
    TYPE,
    always(NamespaceStrategy()),
    (
        ("Name", "string", 0, name),
        ("Status", "string", 0, lambda o: (o.get("status") or {}).get("phase", "")),
        ("Age", "date", 0, age),
    ),
)
