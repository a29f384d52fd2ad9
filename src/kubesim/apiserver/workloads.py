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

from typing import Any, Final

from kubesim.apiserver.registry.registry import ResourceType
from kubesim.apiserver.registry.strategy import PodStrategy, Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import ApiError, Cause
from kubeutil import names

__all__ = [
    "GANG_SCHEDULING",
    "GATES",
    "GENERIC_WORKLOAD",
    "PODGROUPS",
    "TOPOLOGY_AWARE",
    "WORKLOADS",
    "WORKLOAD_AWARE_PREEMPTION",
    "WorkloadGates",
    "enable",
]

GENERIC_WORKLOAD: Final = "GenericWorkload"
GANG_SCHEDULING: Final = "GangScheduling"
TOPOLOGY_AWARE: Final = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION: Final = "WorkloadAwarePreemption"
GATES: Final = (GENERIC_WORKLOAD, GANG_SCHEDULING, TOPOLOGY_AWARE, WORKLOAD_AWARE_PREEMPTION)

GROUP: Final = "scheduling.k8s.io"
VERSION: Final = "v1alpha2"
WORKLOADS: Final = ResourceType(GROUP, VERSION, "Workload", "workloads", True)
PODGROUPS: Final = ResourceType(
    GROUP, VERSION, "PodGroup", "podgroups", True, subresources=frozenset({"status"})
)
MAX_TEMPLATES: Final = 8
MAX_PRIORITY: Final = 1_000_000_000
DISRUPTION_MODES: Final = ("Pod", "PodGroup")
_POLICIES: Final = ("basic", "gang")


class WorkloadGates:
    """Which of the gates are on; everything off by default, as in Kubernetes 1.36."""

    def __init__(self, gates: dict[str, bool]) -> None:
        self.generic = bool(gates.get(GENERIC_WORKLOAD))
        self.gang = bool(gates.get(GANG_SCHEDULING))
        self.topology = bool(gates.get(TOPOLOGY_AWARE))
        self.preemption = bool(gates.get(WORKLOAD_AWARE_PREEMPTION))


def enable(core: Any, gates: dict[str, bool]) -> WorkloadGates:
    """Serve the types and the pod field on `core` (an ApiCore) as the gates say."""
    on = WorkloadGates(gates)
    if not on.generic:
        return on
    core.registry.add(WORKLOADS)
    core.registry.add(PODGROUPS)
    core.strategy_overrides[WORKLOADS.key] = WorkloadStrategy(on)
    core.strategy_overrides[PODGROUPS.key] = PodGroupStrategy(on, core)
    core.strategy_overrides[("", "pods")] = GroupedPodStrategy()
    return on


# ------------------------------------------------------------------ field checks


def _name_errors(path: str, value: Any, check: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [fe.required(path)]
    return [fe.invalid(path, value, msg) for msg in check(value)]


def _path_segment_errors(path: str, value: Any) -> list[Cause]:
    """`k8s-path-segment-name`: what may stand in a URL path segment."""
    if not isinstance(value, str) or not value:
        return [fe.required(path)]
    if value in (".", ".."):
        return [fe.invalid(path, value, f"may not be '{value}'")]
    for bad in ("/", "%"):
        if bad in value:
            return [fe.invalid(path, value, f"may not contain '{bad}'")]
    return []


def _policy_errors(path: str, policy: Any) -> list[Cause]:
    if not isinstance(policy, dict):
        return [fe.required(path)]
    chosen = [p for p in _POLICIES if policy.get(p) is not None]
    if not chosen:
        return [fe.invalid(path, fe.OMIT, "must specify one of: `basic`, `gang`")]
    if len(chosen) > 1:
        return [fe.invalid(path, fe.OMIT, "must specify exactly one of: `basic`, `gang`")]
    gang = policy.get("gang")
    if gang is None:
        return []
    if not isinstance(gang, dict) or gang.get("minCount") is None:
        return [fe.required(f"{path}.gang.minCount")]
    count = gang["minCount"]
    if not isinstance(count, int) or count < 1:
        return [fe.invalid(f"{path}.gang.minCount", count, "must be greater than or equal to 1")]
    return []


def _constraints_errors(path: str, constraints: Any) -> list[Cause]:
    if constraints is None:
        return []
    topology = (constraints or {}).get("topology") or []
    if len(topology) > 1:
        return [fe.too_many(f"{path}.topology", len(topology), 1, "item")]
    causes: list[Cause] = []
    for i, item in enumerate(topology):
        key_path = f"{path}.topology[{i}].key"
        key = (item or {}).get("key")
        if not key:
            causes.append(fe.required(key_path))
            continue
        causes += [fe.invalid(key_path, key, m) for m in names.is_qualified_name(key)]
    return causes


def _preemption_errors(path: str, spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    mode = spec.get("disruptionMode")
    if mode is not None and mode not in DISRUPTION_MODES:
        causes.append(fe.not_supported(f"{path}.disruptionMode", mode, DISRUPTION_MODES))
    pc = spec.get("priorityClassName")
    if pc:
        causes += _name_errors(f"{path}.priorityClassName", pc, names.is_dns1123_subdomain)
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > MAX_PRIORITY:
        causes.append(
            fe.invalid(
                f"{path}.priority", priority, f"must be less than or equal to {MAX_PRIORITY}"
            )
        )
    return causes


def _drop_disabled(
    on: WorkloadGates, spec: dict[str, Any], old_spec: dict[str, Any] | None
) -> None:
    """kube-apiserver's dropDisabledFields: a gated field is kept only while its gate is on,
    or when the stored object already used it."""
    old_spec = old_spec or {}
    if not on.topology and old_spec.get("schedulingConstraints") is None:
        spec.pop("schedulingConstraints", None)
    if not on.preemption:
        for key in ("disruptionMode", "priorityClassName", "priority"):
            if old_spec.get(key) is None:
                spec.pop(key, None)


def _immutable(path: str, new: Any, old: Any) -> list[Cause]:
    """Declarative validation's `+k8s:immutable`: Forbidden, without the value."""
    if new != old:
        return [fe.forbidden(path, "field is immutable")]
    return []


# ------------------------------------------------------------------ strategies


class WorkloadStrategy(Strategy):
    """Workload: templates of pod groups, immutable once created."""

    def __init__(self, on: WorkloadGates) -> None:
        self.on = on

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        templates = []
        for t in spec.get("podGroupTemplates") or []:
            t = dict(t or {})
            _drop_disabled(self.on, t, None)
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
            causes += _name_errors(f"{path}.name", name, names.is_dns1123_label)
            if isinstance(name, str) and name:
                if name in seen:
                    causes.append(fe.duplicate(path, fe.Shown(f'{{"name": "{name}"}}')))
                seen.add(name)
            causes += _policy_errors(f"{path}.schedulingPolicy", t.get("schedulingPolicy"))
            causes += _constraints_errors(
                f"{path}.schedulingConstraints", t.get("schedulingConstraints")
            )
            causes += _preemption_errors(path, t)
        if old is not None:
            old_spec = old.get("spec") or {}
            if old_spec.get("controllerRef") is not None:
                causes += _immutable(
                    "spec.controllerRef", spec.get("controllerRef"), old_spec["controllerRef"]
                )
            causes += _immutable(
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
        causes += _name_errors(f"{path}.apiGroup", group, names.is_dns1123_subdomain)
    causes += _path_segment_errors(f"{path}.kind", ref.get("kind"))
    causes += _path_segment_errors(f"{path}.name", ref.get("name"))
    return causes


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

    def __init__(self, on: WorkloadGates, core: Any) -> None:
        self.on = on
        self.core = core

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        _drop_disabled(self.on, spec, None)
        if self.on.preemption:
            spec.setdefault("disruptionMode", "Pod")
            self._admit_priority(obj["metadata"]["name"], spec)
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def _admit_priority(self, name: str, spec: dict[str, Any]) -> None:
        """The Priority admission plugin's resolution of `priorityClassName`."""
        classes = self.core.store.resource(("scheduling.k8s.io", "priorityclasses")).objects
        pc_name = spec.get("priorityClassName")
        if pc_name:
            pc = classes.get(("", pc_name))
            if pc is None:
                raise ApiError(
                    403,
                    "Forbidden",
                    f'podgroups.scheduling.k8s.io "{name}" is forbidden: '
                    f"no PriorityClass with name {pc_name} was found",
                    group=GROUP,
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
                group=GROUP,
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
        _drop_disabled(self.on, spec, old.get("spec") or {})
        obj["spec"] = spec
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = _template_ref_errors(spec.get("podGroupTemplateRef"))
        causes += _policy_errors("spec.schedulingPolicy", spec.get("schedulingPolicy"))
        causes += _constraints_errors(
            "spec.schedulingConstraints", spec.get("schedulingConstraints")
        )
        causes += _preemption_errors("spec", spec)
        if old is not None:
            old_spec = old.get("spec") or {}
            for key in self._IMMUTABLE:
                causes += _immutable(f"spec.{key}", spec.get(key), old_spec.get(key))
        return causes


def _template_ref_errors(ref: Any) -> list[Cause]:
    if ref is None:
        return []
    path = "spec.podGroupTemplateRef"
    workload = (ref or {}).get("workload")
    if workload is None:
        return [fe.invalid(path, fe.OMIT, "must specify one of: `workload`")]
    causes = _name_errors(
        f"{path}.workload.workloadName", workload.get("workloadName"), names.is_dns1123_subdomain
    )
    causes += _name_errors(
        f"{path}.workload.podGroupTemplateName",
        workload.get("podGroupTemplateName"),
        names.is_dns1123_label,
    )
    return causes


def drop_scheduling_group(obj: dict[str, Any]) -> None:
    """With GenericWorkload off a pod's `spec.schedulingGroup` is dropped on create."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and "schedulingGroup" in spec:
        obj["spec"] = {k: v for k, v in spec.items() if k != "schedulingGroup"}


class GroupedPodStrategy(PodStrategy):
    """Pods with GenericWorkload on: `spec.schedulingGroup` kept and validated. Like the rest
    of a pod's spec it is immutable (PodStrategy's update check covers it)."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        group = (obj.get("spec") or {}).get("schedulingGroup")
        obj = super().prepare_for_create(rt, obj)
        if group is not None:
            obj["spec"]["schedulingGroup"] = group
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        causes = super().validate(rt, obj, old)
        group = (obj.get("spec") or {}).get("schedulingGroup")
        if group is not None:
            causes += _name_errors(
                "spec.schedulingGroup.podGroupName",
                (group or {}).get("podGroupName"),
                names.is_dns1123_subdomain,
            )
        return causes
