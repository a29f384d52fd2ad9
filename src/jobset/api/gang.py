"""`scheduling.jobset-py.dev/gang`: a JobSet asks for gang scheduling with one annotation.

With the annotation the controller keeps, for the JobSet, the objects Kubernetes'
Workload-Aware Scheduling reads (`scheduling.k8s.io/v1alpha2`), so the user writes no
Workload or PodGroup by hand and nothing drifts from the JobSet:

- one Workload named after the JobSet, `spec.controllerRef` and a controller ownerReference
  to it, with one pod group template per group shape;
- PodGroups, each with a gang policy whose `minCount` is the pods of that group:
  ``JobSet`` one group `<jobset>` for every pod; ``ReplicatedJob`` one group
  `<jobset>-<replicatedJob>` per ReplicatedJob; ``Job`` one group per child Job, named as
  the Job (`<jobset>-<replicatedJob>-<index>`);
- `spec.schedulingGroup.podGroupName` in the pod templates of the child Jobs.

A Job's pods are `parallelism` pods at once (capped by `completions`), as the Job controller
creates them; the groups follow replica changes (elastic JobSets), and keep their names
across restarts, so recreated Jobs rejoin them.

Pure functions: what the objects should be. `controllers/gang_controller.py` writes them;
`webhooks/jobset_webhook.py` refuses bad values with `validation_errors`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from jobset.api import constants as c
from jobset.api.types import job_name, name_of, namespace_of, owner_reference
from jobset.api.validation.errors import ErrorType, FieldError, invalid

__all__ = [
    "GANG_ANNOTATION",
    "GANG_MODES",
    "MAX_TEMPLATES",
    "desired_pod_groups",
    "desired_workload",
    "gang_mode",
    "pod_group_name",
    "pods_per_job",
    "set_scheduling_group",
    "validation_errors",
]

GANG_ANNOTATION: Final = "scheduling.jobset-py.dev/gang"
GANG_MODES: Final = ("JobSet", "ReplicatedJob", "Job")
MAX_TEMPLATES: Final = 8  # a Workload holds at most 8 pod group templates
SCHEDULING_API: Final = "scheduling.k8s.io/v1alpha2"
_JOBSET_TEMPLATE: Final = "jobset"


def gang_mode(js: Mapping[str, Any]) -> str | None:
    """The annotation's value when it is one this controller knows, else None."""
    value = ((js.get("metadata") or {}).get("annotations") or {}).get(GANG_ANNOTATION)
    return value if value in GANG_MODES else None


def _rjobs(js: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((js.get("spec") or {}).get("replicatedJobs") or [])


def pods_per_job(rjob: Mapping[str, Any]) -> int:
    """Pods a Job of `rjob` runs at once: parallelism (default 1) capped by completions."""
    spec = (rjob.get("template") or {}).get("spec") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))


def _replicas(rjob: Mapping[str, Any]) -> int:
    replicas = rjob.get("replicas")
    return 1 if replicas is None else int(replicas)


def pod_group_name(js: Mapping[str, Any], rjob_name: str, job_index: int) -> str | None:
    """The PodGroup the pods of Job `job_index` of `rjob_name` join, or None."""
    mode = gang_mode(js)
    if mode == "JobSet":
        return name_of(js)
    if mode == "ReplicatedJob":
        return f"{name_of(js)}-{rjob_name}"
    if mode == "Job":
        return job_name(js, rjob_name, job_index)
    return None


def _group_spec(workload: str, template: str, min_count: int) -> dict[str, Any]:
    return {
        "podGroupTemplateRef": {
            "workload": {"workloadName": workload, "podGroupTemplateName": template}
        },
        "schedulingPolicy": {"gang": {"minCount": min_count}},
    }


def _templates(js: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(template name, minCount) per group shape."""
    mode = gang_mode(js)
    rjobs = _rjobs(js)
    if mode == "JobSet":
        total = sum(_replicas(r) * pods_per_job(r) for r in rjobs)
        return [(_JOBSET_TEMPLATE, total)]
    if mode == "ReplicatedJob":
        return [(str(r.get("name")), _replicas(r) * pods_per_job(r)) for r in rjobs]
    if mode == "Job":
        return [(str(r.get("name")), pods_per_job(r)) for r in rjobs]
    return []


def _labelled_meta(js: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace_of(js),
        "labels": {c.JOBSET_NAME_KEY: name_of(js)},
        "ownerReferences": [owner_reference(js)],
    }


def desired_workload(js: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Workload of the JobSet, or None without the annotation."""
    templates = _templates(js)
    if not templates:
        return None
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "Workload",
        "metadata": _labelled_meta(js, name_of(js)),
        "spec": {
            "controllerRef": {"apiGroup": c.GROUP, "kind": c.KIND, "name": name_of(js)},
            "podGroupTemplates": [
                {"name": name, "schedulingPolicy": {"gang": {"minCount": count}}}
                for name, count in templates
            ],
        },
    }


def desired_pod_groups(js: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """PodGroup name -> the PodGroup, for every group the JobSet's pods join now."""
    mode = gang_mode(js)
    workload = name_of(js)
    out: dict[str, dict[str, Any]] = {}

    def add(name: str, template: str, count: int) -> None:
        if count > 0:
            out[name] = {
                "apiVersion": SCHEDULING_API,
                "kind": "PodGroup",
                "metadata": _labelled_meta(js, name),
                "spec": _group_spec(workload, template, count),
            }

    for template, count in _templates(js) if mode != "Job" else []:
        rjob_name = "" if mode == "JobSet" else template
        name = pod_group_name(js, rjob_name, 0)
        assert name is not None
        add(name, template, count)
    if mode == "Job":
        for rjob in _rjobs(js):
            rname = str(rjob.get("name"))
            for index in range(_replicas(rjob)):
                add(job_name(js, rname, index), rname, pods_per_job(rjob))
    return out


def set_scheduling_group(
    js: Mapping[str, Any], rjob_name: str, job_index: int, pod_spec: dict[str, Any]
) -> None:
    """Point the pods of a child Job at their PodGroup (nothing without the annotation)."""
    name = pod_group_name(js, rjob_name, job_index)
    if name is not None:
        pod_spec["schedulingGroup"] = {"podGroupName": name}


def validation_errors(js: Mapping[str, Any]) -> list[FieldError]:
    """What the webhook refuses: an unknown value of the annotation, more templates than a
    Workload holds, and pod templates that set `schedulingGroup` the controller would set
    otherwise."""
    annotations = (js.get("metadata") or {}).get("annotations") or {}
    if GANG_ANNOTATION not in annotations:
        return []
    value = annotations[GANG_ANNOTATION]
    path = f"metadata.annotations[{GANG_ANNOTATION}]"
    if value not in GANG_MODES:
        supported = ", ".join(f'"{m}"' for m in GANG_MODES)
        return [FieldError(path, ErrorType.NOT_SUPPORTED, f"supported values: {supported}", value)]
    errors: list[FieldError] = []
    rjobs = _rjobs(js)
    if value != "JobSet" and len(rjobs) > MAX_TEMPLATES:
        errors.append(
            invalid(
                path,
                value,
                f"a Workload holds at most {MAX_TEMPLATES} pod group templates, one per "
                "ReplicatedJob: use JobSet",
            )
        )
    spec = js.get("spec") or {}
    in_order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
    if (
        value == "JobSet"
        and len(rjobs) > 1
        and (in_order or any(r.get("dependsOn") for r in rjobs))
    ):
        errors.append(
            invalid(
                path,
                value,
                "one gang of every pod never starts when ReplicatedJobs start one after "
                "another (startupPolicy InOrder, dependsOn): use ReplicatedJob or Job",
            )
        )
    for i, rjob in enumerate(rjobs):
        pod_spec = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
        group = (pod_spec.get("spec") or {}).get("schedulingGroup")
        if group is None:
            continue
        set_name = (group or {}).get("podGroupName")
        want = pod_group_name(js, str(rjob.get("name")), 0) if value != "Job" else None
        if want is None or set_name != want:
            errors.append(
                invalid(
                    f"spec.replicatedJobs[{i}].template.spec.template.spec.schedulingGroup"
                    ".podGroupName",
                    set_name,
                    f"the controller sets it for {GANG_ANNOTATION}={value}; leave it unset",
                )
            )
    return errors
