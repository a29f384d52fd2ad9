"""batch/v1 Job: the generated selector and labels, defaults, what may change, and with
MutablePodResourcesForSuspendedJobs the resources of a suspended Job's template."""

from __future__ import annotations

import time
from typing import Any

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.columns import Obj, age, human_age, name
from kubesim.apiserver.registry.core.poddns import validate_pod_dns
from kubesim.apiserver.registry.core.podvalidation import validate_pod_spec
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy, immutable
from kubesim.clock import parse_rfc3339
from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause

TYPE = ResourceType(
    "batch", "v1", "Job", "jobs", True, subresources=frozenset(("status",)), categories=("all",)
)


class JobStrategy(Strategy):
    """batch/v1 Job: the generated selector and labels, defaults, and what may change.

    `mutable_pod_resources`: Kubernetes' MutablePodResourcesForSuspendedJobs (KEP-5440, alpha
    in 1.35, off by default): the containers' and init containers' `resources.requests` and
    `resources.limits` of a suspended Job that never started may change too.
    """

    def __init__(self, *, mutable_pod_resources: bool = False) -> None:
        self.mutable_pod_resources = mutable_pod_resources

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        meta = obj["metadata"]
        uid = meta["uid"]
        template = dict(spec.get("template") or {})
        tmeta = dict(template.get("metadata") or {})
        if not spec.get("manualSelector"):
            labels = {
                **(tmeta.get("labels") or {}),
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": meta["name"],
                "controller-uid": uid,
                "job-name": meta["name"],
            }
            tmeta["labels"] = labels
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        template["metadata"] = tmeta
        spec["template"] = template
        meta["labels"] = meta.get("labels") or {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": meta["name"],
            "controller-uid": uid,
            "job-name": meta["name"],
        }
        # As in Kubernetes: with neither set, both default to 1; with only parallelism
        # set, completions stays unset (a work-queue Job).
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        # With backoffLimitPerIndex the global limit defaults to "no limit", as in Kubernetes.
        spec.setdefault(
            "backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
        )
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        pod = (spec.get("template") or {}).get("spec") or {}
        causes += validate_pod_spec(pod, "spec.template.spec")
        policy = pod.get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            causes.append(
                fe.not_supported(
                    "spec.template.spec.restartPolicy", policy or "", ("OnFailure", "Never")
                )
            )
        causes.extend(validate_pod_dns(pod, "spec.template.spec"))
        if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
            causes.append(fe.required("spec.completions", "when completion mode is Indexed"))
        for fld in ("parallelism", "completions", "backoffLimit"):
            v = spec.get(fld)
            if v is not None and (not isinstance(v, int) or v < 0):
                causes.append(fe.invalid(f"spec.{fld}", v, "must be greater than or equal to 0"))
        if old is None:
            return causes
        old_spec = old.get("spec") or {}
        causes += immutable("spec.selector", spec.get("selector"), old_spec.get("selector"))
        causes += immutable(
            "spec.completionMode", spec.get("completionMode"), old_spec.get("completionMode")
        )
        if spec.get("completions") != old_spec.get("completions") and not (
            spec.get("completionMode") == "Indexed"
            and spec.get("completions") == spec.get("parallelism")
        ):
            causes += immutable(
                "spec.completions", spec.get("completions"), old_spec.get("completions")
            )
        tmpl, old_tmpl = spec.get("template") or {}, old_spec.get("template") or {}
        if tmpl != old_tmpl:
            # Kubernetes lets the scheduling directives of a suspended Job that never
            # started change (the contract Kueue and JobSet rely on); nothing else.
            started = (old.get("status") or {}).get("startTime") is not None
            suspended = bool(old_spec.get("suspend"))
            if suspended and not started:
                causes += immutable(
                    "spec.template",
                    _without_sched(tmpl, self.mutable_pod_resources),
                    _without_sched(old_tmpl, self.mutable_pod_resources),
                )
            else:
                causes += immutable("spec.template", tmpl, old_tmpl)
        return causes


def _without_sched(tmpl: dict[str, Any], resources: bool = False) -> dict[str, Any]:
    """The pod template without what a suspended Job's template may change: the scheduling
    directives, and with `resources` the containers' requests and limits (claims stay)."""
    meta = {
        k: v for k, v in (tmpl.get("metadata") or {}).items() if k not in ("labels", "annotations")
    }
    spec = {
        k: v
        for k, v in (tmpl.get("spec") or {}).items()
        if k not in ("nodeSelector", "tolerations", "schedulingGates", "affinity")
    }
    if resources:
        for key in ("containers", "initContainers"):
            if isinstance(spec.get(key), list):
                spec[key] = [_without_requests_limits(c) for c in spec[key]]
    return {"metadata": meta, "spec": spec}


def _without_requests_limits(container: Any) -> Any:
    if not isinstance(container, dict) or not isinstance(container.get("resources"), dict):
        return container
    kept = {k: v for k, v in container["resources"].items() if k not in ("requests", "limits")}
    return {**container, "resources": kept}


def _job_status(o: Obj) -> str:
    conds = {
        c.get("type"): c.get("status") for c in (o.get("status") or {}).get("conditions") or []
    }
    if conds.get("Complete") == "True":
        return "Complete"
    if conds.get("Failed") == "True":
        return "Failed"
    if conds.get("FailureTarget") == "True":
        return "FailureTarget"
    if conds.get("Suspended") == "True":
        return "Suspended"
    return "Running"


def _job_completions(o: Obj) -> str:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    completions = spec.get("completions")
    succeeded = status.get("succeeded", 0)
    if completions is None:
        return f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    return f"{succeeded}/{completions}"


def _job_duration(o: Obj) -> str:
    status = o.get("status") or {}
    start = status.get("startTime")
    if not start:
        return ""
    end = status.get("completionTime")
    stop = parse_rfc3339(end) if end else time.time()
    return human_age(stop - parse_rfc3339(start))


_JOBS = JobStrategy()


def _strategy(gates: FeatureGates, _store: Store) -> Strategy:
    return JobStrategy(mutable_pod_resources=True) if gates.mutable_pod_resources else _JOBS


RESOURCE = Resource(
    TYPE,
    _strategy,
    (
        ("Name", "string", 0, name),
        ("Status", "string", 0, _job_status),
        ("Completions", "string", 0, _job_completions),
        ("Duration", "string", 0, _job_duration),
        ("Age", "date", 0, age),
        (
            "Containers",
            "string",
            1,
            lambda o: ",".join(
                c.get("name", "")
                for c in ((o.get("spec") or {}).get("template") or {})
                .get("spec", {})
                .get("containers")
                or []
            ),
        ),
        (
            "Images",
            "string",
            1,
            lambda o: ",".join(
                c.get("image", "")
                for c in ((o.get("spec") or {}).get("template") or {})
                .get("spec", {})
                .get("containers")
                or []
            ),
        ),
        (
            "Selector",
            "string",
            1,
            lambda o: ",".join(
                f"{k}={v}"
                for k, v in (
                    ((o.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
                ).items()
            ),
        ),
    ),
)
