"""apps/v1 Deployment: replicas and rollout defaults, a required and immutable selector."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.columns import age, name, workload_wide
from kubesim.apiserver.registry.core.podvalidation import validate_replica_template
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy, immutable
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause

TYPE = ResourceType(
    "apps",
    "v1",
    "Deployment",
    "deployments",
    True,
    short_names=("deploy",),
    subresources=frozenset(("status", "scale")),
    categories=("all",),
)


class DeploymentStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        spec.setdefault(
            "strategy",
            {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
        )
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        if not spec.get("selector"):
            causes.append(fe.required("spec.selector"))
        causes += validate_replica_template(spec)
        if old is not None:
            causes += immutable(
                "spec.selector", spec.get("selector"), (old.get("spec") or {}).get("selector")
            )
        return causes


RESOURCE = Resource(
    TYPE,
    always(DeploymentStrategy()),
    (
        ("Name", "string", 0, name),
        (
            "Ready",
            "string",
            0,
            lambda o: (
                f"{(o.get('status') or {}).get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 0)}"
            ),
        ),
        ("Up-to-date", "integer", 0, lambda o: (o.get("status") or {}).get("updatedReplicas", 0)),
        ("Available", "integer", 0, lambda o: (o.get("status") or {}).get("availableReplicas", 0)),
        ("Age", "date", 0, age),
        *workload_wide(),
    ),
)
