"""Field checks the Workload-Aware Scheduling types share (`workload.py`, `podgroup.py`, and
`spec.schedulingGroup` of a pod in `registry/core/pod.py`), with kube-apiserver's messages."""

from __future__ import annotations

from typing import Any, Final

from kubesim.apiserver.registry.features import FeatureGates
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause
from kubeutil import names

MAX_TEMPLATES: Final = 8
MAX_PRIORITY: Final = 1_000_000_000
DISRUPTION_MODES: Final = ("Pod", "PodGroup")
POLICIES: Final = ("basic", "gang")


def name_errors(path: str, value: Any, check: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [fe.required(path)]
    return [fe.invalid(path, value, msg) for msg in check(value)]


def path_segment_errors(path: str, value: Any) -> list[Cause]:
    """`k8s-path-segment-name`: what may stand in a URL path segment."""
    if not isinstance(value, str) or not value:
        return [fe.required(path)]
    if value in (".", ".."):
        return [fe.invalid(path, value, f"may not be '{value}'")]
    for bad in ("/", "%"):
        if bad in value:
            return [fe.invalid(path, value, f"may not contain '{bad}'")]
    return []


def policy_errors(path: str, policy: Any) -> list[Cause]:
    if not isinstance(policy, dict):
        return [fe.required(path)]
    chosen = [p for p in POLICIES if policy.get(p) is not None]
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


def constraints_errors(path: str, constraints: Any) -> list[Cause]:
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


def preemption_errors(path: str, spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    mode = spec.get("disruptionMode")
    if mode is not None and mode not in DISRUPTION_MODES:
        causes.append(fe.not_supported(f"{path}.disruptionMode", mode, DISRUPTION_MODES))
    pc = spec.get("priorityClassName")
    if pc:
        causes += name_errors(f"{path}.priorityClassName", pc, names.is_dns1123_subdomain)
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > MAX_PRIORITY:
        causes.append(
            fe.invalid(
                f"{path}.priority", priority, f"must be less than or equal to {MAX_PRIORITY}"
            )
        )
    return causes


def drop_disabled(on: FeatureGates, spec: dict[str, Any], old_spec: dict[str, Any] | None) -> None:
    """kube-apiserver's dropDisabledFields: a gated field is kept only while its gate is on,
    or when the stored object already used it."""
    old_spec = old_spec or {}
    if not on.topology and old_spec.get("schedulingConstraints") is None:
        spec.pop("schedulingConstraints", None)
    if not on.preemption:
        for key in ("disruptionMode", "priorityClassName", "priority"):
            if old_spec.get(key) is None:
                spec.pop(key, None)


def forbid_change(path: str, new: Any, old: Any) -> list[Cause]:
    """Declarative validation's `+k8s:immutable`: Forbidden, without the value."""
    if new != old:
        return [fe.forbidden(path, "field is immutable")]
    return []
