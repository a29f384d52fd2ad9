"""scheduling.k8s.io/v1alpha2 PodGroup, served with the GenericWorkload gate: a runtime group of
pods; spec immutable, status written by the scheduler; `priorityClassName` resolved to
`priority` as the Priority admission plugin does (`workload.py` describes the gates)."""

from __future__ import annotations

from typing import Any, Final

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.features import GENERIC_WORKLOAD, FeatureGates
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.scheduling import schemas
from kubesim.apiserver.registry.scheduling.fields import (
    constraints_errors,
    drop_disabled,
    forbid_change,
    name_errors,
    policy_errors,
    preemption_errors,
)
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import ApiError, Cause
from kubeutil import names

TYPE = ResourceType(
    "scheduling.k8s.io",
    "v1alpha2",
    "PodGroup",
    "podgroups",
    True,
    subresources=frozenset(("status",)),
)


class PodGroupStrategy(Strategy):
    """PodGroup: a runtime group of pods; spec immutable, status written by the scheduler."""

    _IMMUTABLE: Final = (
        "podGroupTemplateRef",
        "schedulingPolicy",
        "schedulingConstraints",
        "disruptionMode",
        "priorityClassName",
        "priority",
    )

    def __init__(self, on: FeatureGates, store: Store) -> None:
        self.on = on
        self.store = store

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        drop_disabled(self.on, spec, None)
        if self.on.preemption:
            spec.setdefault("disruptionMode", "Pod")
            self._admit_priority(obj["metadata"]["name"], spec)
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def _admit_priority(self, name: str, spec: dict[str, Any]) -> None:
        """The Priority admission plugin's resolution of `priorityClassName`."""
        classes = self.store.resource(("scheduling.k8s.io", "priorityclasses")).objects
        pc_name = spec.get("priorityClassName")
        if pc_name:
            pc = classes.get(("", pc_name))
            if pc is None:
                raise ApiError(
                    403,
                    "Forbidden",
                    f'podgroups.scheduling.k8s.io "{name}" is forbidden: '
                    f"no PriorityClass with name {pc_name} was found",
                    group=TYPE.group,
                    kind="podgroups",
                    name=name,
                )
            value = int(pc.get("value") or 0)
        else:
            default = next((pc for pc in classes.values() if pc.get("globalDefault")), None)
            if default is not None:
                spec["priorityClassName"] = default["metadata"]["name"]
            value = int(default.get("value") or 0) if default is not None else 0
        given = spec.get("priority")
        if given is not None and given != value:
            raise ApiError(
                403,
                "Forbidden",
                f'podgroups.scheduling.k8s.io "{name}" is forbidden: the integer value of '
                f"priority ({given}) must not be provided in pod group spec; priority "
                f"admission controller computed {value} from the given PriorityClass name",
                group=TYPE.group,
                kind="podgroups",
                name=name,
            )
        spec["priority"] = value

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        if subresource == "status":
            return obj
        spec = dict(obj.get("spec") or {})
        drop_disabled(self.on, spec, old.get("spec") or {})
        obj["spec"] = spec
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = _template_ref_errors(spec.get("podGroupTemplateRef"))
        causes += policy_errors("spec.schedulingPolicy", spec.get("schedulingPolicy"))
        causes += constraints_errors(
            "spec.schedulingConstraints", spec.get("schedulingConstraints")
        )
        causes += preemption_errors("spec", spec)
        if old is not None:
            old_spec = old.get("spec") or {}
            for key in self._IMMUTABLE:
                causes += forbid_change(f"spec.{key}", spec.get(key), old_spec.get(key))
        return causes


def _template_ref_errors(ref: Any) -> list[Cause]:
    if ref is None:
        return []
    path = "spec.podGroupTemplateRef"
    workload = (ref or {}).get("workload")
    if workload is None:
        return [fe.invalid(path, fe.OMIT, "must specify one of: `workload`")]
    causes = name_errors(
        f"{path}.workload.workloadName", workload.get("workloadName"), names.is_dns1123_subdomain
    )
    causes += name_errors(
        f"{path}.workload.podGroupTemplateName",
        workload.get("podGroupTemplateName"),
        names.is_dns1123_label,
    )
    return causes


def _strategy(gates: FeatureGates, store: Store) -> Strategy:
    return PodGroupStrategy(gates, store)


RESOURCE = Resource(TYPE, _strategy, schema=schemas.PODGROUP, gate=GENERIC_WORKLOAD)
