"""apps/v1 ReplicaSet: the Deployment's selector and template rules, replicas defaulted."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.apps.deployment import DeploymentStrategy
from kubesim.apiserver.registry.columns import age, name, workload_wide
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "apps",
    "v1",
    "ReplicaSet",
    "replicasets",
    True,
    short_names=("rs",),
    subresources=frozenset(("status", "scale")),
    categories=("all",),
)


class ReplicaSetStrategy(DeploymentStrategy):
    """apps/v1 ReplicaSet: the same selector and template rules as a Deployment's."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("replicas", 1)
        obj["spec"] = spec
        obj["status"] = {"replicas": 0}
        return obj


RESOURCE = Resource(
    TYPE,
    always(ReplicaSetStrategy()),
    (
        ("Name", "string", 0, name),
        ("Desired", "integer", 0, lambda o: (o.get("spec") or {}).get("replicas", 1)),
        ("Current", "integer", 0, lambda o: (o.get("status") or {}).get("replicas", 0)),
        ("Ready", "integer", 0, lambda o: (o.get("status") or {}).get("readyReplicas", 0)),
        ("Age", "date", 0, age),
        *workload_wide(),
    ),
)
