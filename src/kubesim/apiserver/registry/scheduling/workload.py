"""Workload-Aware Scheduling APIs: `scheduling.k8s.io/v1alpha2` Workload and PodGroup, and the
pod field `spec.schedulingGroup`, served when `--kube-feature-gates` turns them on.

What kube-apiserver does for them, as its scheduling registry and core pod strategy do:

- `GenericWorkload` serves both types (discovery, OpenAPI, CRUD, `podgroups/status`) and keeps
  `spec.schedulingGroup` on pods; with it off, the types are not served and the pod field is
  dropped on create, as kube-apiserver drops a disabled field.
- `TopologyAwareWorkloadScheduling` keeps `schedulingConstraints`; `WorkloadAwarePreemption`
  keeps `disruptionMode` (defaulted to `Pod` on a PodGroup), `priorityClassName` and
  `priority`. With a gate off its fields are dropped on create, and kept on update only when
  the stored object already had them.
- `GangScheduling` is a scheduler gate (`controllers/scheduler/gang.py` reads it); the API
  server accepts it so that one flag configures the whole simulated control plane.
- A PodGroup's `priorityClassName` is resolved to `priority` as the Priority admission plugin
  does: an unknown class is refused, and with no class the `globalDefault` one applies.

The types follow the v1alpha2 definitions whose field names upstream JobSet's examples use
(`schedulingConstraints.topology[].key`, `disruptionMode`, `priorityClassName`); the messages
are kube-apiserver's field errors. `resourceClaims` (DRAWorkloadResourceClaims) is not served:
the field is dropped like any unknown one.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.features import GENERIC_WORKLOAD, FeatureGates
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.scheduling import schemas
from kubesim.apiserver.registry.scheduling.fields import (
    MAX_TEMPLATES,
    constraints_errors,
    drop_disabled,
    forbid_change,
    name_errors,
    path_segment_errors,
    policy_errors,
    preemption_errors,
)
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause
from kubeutil import names

TYPE = ResourceType("scheduling.k8s.io", "v1alpha2", "Workload", "workloads", True)


class WorkloadStrategy(Strategy):
    """Workload: templates of pod groups, immutable once created."""

    def __init__(self, on: FeatureGates) -> None:
        self.on = on

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        templates = []
        for t in spec.get("podGroupTemplates") or []:
            t = dict(t or {})
            drop_disabled(self.on, t, None)
            templates.append(t)
        if "podGroupTemplates" in spec:
            spec["podGroupTemplates"] = templates
        obj["spec"] = spec
        obj.pop("status", None)
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        obj.pop("status", None)
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = _controller_ref_errors(spec.get("controllerRef"))
        templates = spec.get("podGroupTemplates")
        if not templates:
            causes.append(fe.required("spec.podGroupTemplates"))
        elif len(templates) > MAX_TEMPLATES:
            causes.append(fe.too_many("spec.podGroupTemplates", len(templates), MAX_TEMPLATES))
        seen: set[str] = set()
        for i, t in enumerate(templates or []):
            path = f"spec.podGroupTemplates[{i}]"
            t = t or {}
            name = t.get("name")
            causes += name_errors(f"{path}.name", name, names.is_dns1123_label)
            if isinstance(name, str) and name:
                if name in seen:
                    causes.append(fe.duplicate(path, fe.Shown(f'{{"name": "{name}"}}')))
                seen.add(name)
            causes += policy_errors(f"{path}.schedulingPolicy", t.get("schedulingPolicy"))
            causes += constraints_errors(
                f"{path}.schedulingConstraints", t.get("schedulingConstraints")
            )
            causes += preemption_errors(path, t)
        if old is not None:
            old_spec = old.get("spec") or {}
            if old_spec.get("controllerRef") is not None:
                causes += forbid_change(
                    "spec.controllerRef", spec.get("controllerRef"), old_spec["controllerRef"]
                )
            causes += forbid_change(
                "spec.podGroupTemplates",
                spec.get("podGroupTemplates"),
                old_spec.get("podGroupTemplates"),
            )
        return causes


def _controller_ref_errors(ref: Any) -> list[Cause]:
    if ref is None:
        return []
    path = "spec.controllerRef"
    ref = ref or {}
    causes: list[Cause] = []
    group = ref.get("apiGroup")
    if group:
        causes += name_errors(f"{path}.apiGroup", group, names.is_dns1123_subdomain)
    causes += path_segment_errors(f"{path}.kind", ref.get("kind"))
    causes += path_segment_errors(f"{path}.name", ref.get("name"))
    return causes


def _strategy(gates: FeatureGates, _store: Store) -> Strategy:
    return WorkloadStrategy(gates)


RESOURCE = Resource(TYPE, _strategy, schema=schemas.WORKLOAD, gate=GENERIC_WORKLOAD)
