"""The rules of an update: replicatedJobs and managedBy immutable, with Kueue's and elastic
JobSets' exceptions (ElasticJobSet: parallelism and completions; this project's
ElasticReplicas: replicas)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from jobset.api import constants as c
from jobset.api import types as t
from jobset.api.defaulting import defaulted_view
from jobset.api.validation.create import validate_shape
from jobset.api.validation.errors import FieldError, forbidden, invalid
from jobset.api.validation.helpers import gate, is_indexed
from jobset.api.validation.limits import DEFAULT_LIMITS, MAX_PODS_FLAG, Limits
from jobset.api.validation.semantic import semantic_equal

__all__ = ["ELASTIC_REPLICAS_TERMINAL_MSG", "ELASTIC_TERMINAL_MSG", "validate_update"]

# Pod-template fields Kueue may change while a JobSet is (or is becoming) suspended:
# metadata labels/annotations, and the scheduling-related pod spec fields.
_KUEUE_MUTABLE: Final[tuple[tuple[str, ...], ...]] = (
    ("template", "spec", "template", "metadata", "annotations"),
    ("template", "spec", "template", "metadata", "labels"),
    ("template", "spec", "template", "spec", "nodeSelector"),
    ("template", "spec", "template", "spec", "tolerations"),
    ("template", "spec", "template", "spec", "schedulingGates"),
)
ELASTIC_TERMINAL_MSG: Final = (
    "Cannot mutate parallelism or completions when JobSet is in a terminal state "
    "(Completed or Failed)"
)

ELASTIC_REPLICAS_TERMINAL_MSG: Final = (
    "Cannot mutate replicas when JobSet is in a terminal state (Completed or Failed)"
)


def validate_update(
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    features: Mapping[str, bool] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[FieldError]:
    """Rules for an update: replicatedJobs and managedBy are immutable, with two exceptions.

    - While the old or the new JobSet is suspended, each pod template's labels, annotations,
      nodeSelector, tolerations and schedulingGates may change (how Kueue injects its
      placement decisions before admitting a workload).
    - With the ElasticJobSet gate, parallelism and completions of Indexed Jobs may change
      (equal to each other, at least 1) unless the JobSet already finished.
    - With the MutablePodResourcesForSuspendedJobSets gate (KEP-1150), under the same
      suspended condition, the `resources.requests` and `resources.limits` of containers
      and init containers (matched by name) may change too; claims may not.
    - With this project's ElasticReplicas gate, `replicas` may change (at least 1) unless the
      JobSet already finished.

    After an elastic change the new object must still pass the create rules that depend on
    its shape (`validate_shape`: the coordinator's Job and pod index, name lengths, the Jobs
    and pods caps, the RestartJob replicas ceiling), so no accepted update leaves a stored
    JobSet that cannot run.

    Both objects are compared in their defaulted forms (`defaulted_view`): `kubectl apply`
    of an unchanged manifest sends the lists it holds without the defaults the mutating
    webhook filled in on create, and that is no change. Upstream compares them as sent.

    network, successPolicy, failurePolicy, startupPolicy and volumeClaimPolicies are
    immutable through the CRD's CEL rules, not here. `limits.max_pods_per_job` applies to a
    changed parallelism or completions as on create.
    """
    errs: list[FieldError] = []
    new, old = defaulted_view(new), defaulted_view(old)
    new_spec: Mapping[str, Any] = new.get("spec") or {}
    old_spec: Mapping[str, Any] = old.get("spec") or {}
    new_rjobs: list[Mapping[str, Any]] = list(new_spec.get("replicatedJobs") or [])
    old_rjobs: list[Mapping[str, Any]] = list(old_spec.get("replicatedJobs") or [])
    munged: list[dict[str, Any]] = copy.deepcopy([dict(r) for r in new_rjobs])
    old_by_name = {str(r.get("name") or ""): r for r in old_rjobs}
    # What may change is set back to the old values in `munged`; what is left must be equal.
    reshaped = _elastic_changes(new_rjobs, old_by_name, munged, old, features, limits, errs)
    if t.is_suspended(old) or t.is_suspended(new):
        resources = gate(features, c.FEATURE_MUTABLE_POD_RESOURCES)
        for idx, new_rjob in enumerate(new_rjobs):
            old_rjob = old_by_name.get(str(new_rjob.get("name") or ""))
            if old_rjob is None:
                continue
            for keys in _KUEUE_MUTABLE:
                _path_set(munged[idx], keys, _path_get(old_rjob, keys))
            if resources:
                _munge_container_resources(munged[idx], old_rjob)

    if not semantic_equal(munged, old_rjobs):
        errs.append(invalid("spec.replicatedJobs", munged, "field is immutable"))
    if not semantic_equal(new_spec.get("managedBy"), old_spec.get("managedBy")):
        errs.append(invalid("spec.managedBy", new_spec.get("managedBy"), "field is immutable"))
    if reshaped and not errs:
        errs.extend(validate_shape(new, features=features, limits=limits))
    return errs


def _elastic_changes(
    new_rjobs: list[Mapping[str, Any]],
    old_by_name: Mapping[str, Mapping[str, Any]],
    munged: list[dict[str, Any]],
    old: Mapping[str, Any],
    features: Mapping[str, bool] | None,
    limits: Limits,
    errs: list[FieldError],
) -> bool:
    """The elastic gates' part of `validate_update`: their errors go to `errs`, the fields
    they let change are set back in `munged`; whether the JobSet's shape changed."""
    reshaped = False
    if gate(features, c.FEATURE_ELASTIC_JOBSET):
        terminal = t.is_finished(old)
        for idx, new_rjob in enumerate(new_rjobs):
            old_rjob = old_by_name.get(str(new_rjob.get("name") or ""))
            if old_rjob is None:
                continue
            new_job, old_job = t.job_spec(new_rjob), t.job_spec(old_rjob)
            if not is_indexed(new_job):
                continue
            errs.extend(_validate_elastic(idx, new_job, old_job, terminal, limits))
            for key in ("parallelism", "completions"):
                _path_set(munged[idx], ("template", "spec", key), old_job.get(key))
            if par_or_comp_changed(new_job, old_job):
                reshaped = True

    if gate(features, c.FEATURE_ELASTIC_REPLICAS):
        terminal = t.is_finished(old)
        for idx, new_rjob in enumerate(new_rjobs):
            old_rjob = old_by_name.get(str(new_rjob.get("name") or ""))
            if old_rjob is None or t.replicas(new_rjob) == t.replicas(old_rjob):
                continue
            reshaped = True
            errs.extend(_validate_elastic_replicas(idx, new_rjob, terminal))
            _path_set(munged[idx], ("replicas",), old_rjob.get("replicas"))
    return reshaped


def _munge_container_resources(munged: dict[str, Any], old_rjob: Mapping[str, Any]) -> None:
    """KEP-1150: each container's (and init container's) `resources.requests` and `limits`
    set back to the old template's, matched by name, so only they may differ; claims, other
    fields, and containers added or removed stay under the immutability check."""
    for key in ("containers", "initContainers"):
        path = ("template", "spec", "template", "spec", key)
        new_list = _path_get(munged, path)
        old_list = _path_get(old_rjob, path)
        if not isinstance(new_list, list) or not isinstance(old_list, list):
            continue
        old_by_name = {
            ct.get("name"): ct.get("resources") or {} for ct in old_list if isinstance(ct, Mapping)
        }
        for container in new_list:
            if not isinstance(container, dict) or container.get("name") not in old_by_name:
                continue
            old_res = old_by_name[container.get("name")]
            res = dict(container.get("resources") or {})
            for field in ("requests", "limits"):
                if old_res.get(field) is None:
                    res.pop(field, None)
                else:
                    res[field] = copy.deepcopy(old_res[field])
            container["resources"] = res


def par_or_comp_changed(new_job: Mapping[str, Any], old_job: Mapping[str, Any]) -> bool:
    """Whether an Indexed Job template's parallelism or completions changed."""
    return any(new_job.get(k) != old_job.get(k) for k in ("parallelism", "completions"))


def _validate_elastic_replicas(
    idx: int, new_rjob: Mapping[str, Any], terminal: bool
) -> list[FieldError]:
    path = f"spec.replicatedJobs[{idx}].replicas"
    if terminal:
        return [forbidden(path, ELASTIC_REPLICAS_TERMINAL_MSG)]
    reps = t.replicas(new_rjob)
    if reps < 1:
        return [invalid(path, reps, "replicas must be >= 1")]
    return []


def _validate_elastic(
    idx: int,
    new_job: Mapping[str, Any],
    old_job: Mapping[str, Any],
    terminal: bool,
    limits: Limits = DEFAULT_LIMITS,
) -> list[FieldError]:
    path = f"spec.replicatedJobs[{idx}].template.spec"
    par, comp = new_job.get("parallelism"), new_job.get("completions")
    par_changed = par != old_job.get("parallelism")
    comp_changed = comp != old_job.get("completions")
    if not (par_changed or comp_changed):
        return []
    if terminal:
        return [forbidden(path, ELASTIC_TERMINAL_MSG)]
    errs = []
    if par_changed and par is not None and int(par) < 1:
        errs.append(invalid(f"{path}.parallelism", par, "parallelism must be >= 1"))
    if comp_changed and comp is not None and int(comp) < 1:
        errs.append(invalid(f"{path}.completions", comp, "completions must be >= 1"))
    if par is not None and comp is not None and int(par) != int(comp):
        errs.append(
            invalid(
                f"{path}.completions",
                comp,
                "completions must be equal to parallelism for Elastic Indexed Jobs",
            )
        )
    max_pods = limits.max_pods_per_job
    for key, value, changed in (
        ("parallelism", par, par_changed),
        ("completions", comp, comp_changed),
    ):
        if changed and max_pods is not None and value is not None and int(value) > max_pods:
            errs.append(
                invalid(
                    f"{path}.{key}",
                    value,
                    f"must be no more than {max_pods}: a Job of a JobSet may have at most "
                    f"{max_pods} pods (the controller's {MAX_PODS_FLAG} flag sets this limit)",
                )
            )
    return errs


def _path_set(root: dict[str, Any], keys: Sequence[str], value: Any) -> None:
    """Set root[k0][k1]...=value, creating dicts; a None value removes the leaf."""
    node = root
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            if value is None:
                return
            child = {}
            node[key] = child
        node = child
    if value is None:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = copy.deepcopy(value)


def _path_get(root: Mapping[str, Any] | None, keys: Sequence[str]) -> Any:
    node: Any = root
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node
