"""core/v1 ReplicationController: selector, labels and replicas defaulted from the template;
the template follows the ReplicaSet rules."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.columns import age, name, workload_wide
from kubesim.apiserver.registry.core.podvalidation import validate_replica_template
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause

TYPE = ResourceType(
    "",
    "v1",
    "ReplicationController",
    "replicationcontrollers",
    True,
    short_names=("rc",),
    subresources=frozenset(("status", "scale")),
    categories=("all",),
)


class ReplicationControllerStrategy(Strategy):
    """core/v1 ReplicationController: the selector and the object's labels default to the
    template's labels, replicas to 1; the template follows the ReplicaSet rules."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not spec.get("selector") and labels:
            spec["selector"] = dict(labels)
        if not obj["metadata"].get("labels") and labels:
            obj["metadata"]["labels"] = dict(labels)
        spec.setdefault("replicas", 1)
        obj["spec"] = spec
        obj["status"] = {"replicas": 0}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        if not spec.get("selector"):
            causes.append(fe.required("spec.selector"))
        replicas = spec.get("replicas")
        if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
            causes.append(
                fe.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
            )
        return causes + validate_replica_template(spec)


RESOURCE = Resource(
    TYPE,
    always(ReplicationControllerStrategy()),
    (
        ("Name", "string", 0, name),
        ("Desired", "integer", 0, lambda o: (o.get("spec") or {}).get("replicas", 1)),
        ("Current", "integer", 0, lambda o: (o.get("status") or {}).get("replicas", 0)),
        ("Ready", "integer", 0, lambda o: (o.get("status") or {}).get("readyReplicas", 0)),
        ("Age", "date", 0, age),
        *workload_wide(),
    ),
)
