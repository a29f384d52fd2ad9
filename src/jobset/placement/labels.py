"""Exclusive-placement annotations on child Jobs, and the node-selector strategy.

A user asks for exclusive placement with the annotation
`alpha.jobset.sigs.k8s.io/exclusive-topology: <node label key>` on the JobSet (every Job)
or on one ReplicatedJob's Job template (that ReplicatedJob; it wins over the JobSet's).
The controller copies it - and `alpha.jobset.sigs.k8s.io/node-selector`, which selects the
node-selector strategy, from the same level - onto each child Job and its pod template as
annotations (never labels), where the pod webhooks read them.

Node-selector strategy: instead of pod (anti-)affinities, which schedule slowly at scale,
the user labels each domain's nodes `alpha.jobset.sigs.k8s.io/namespaced-job=<ns>_<job>`
and taints them `alpha.jobset.sigs.k8s.io/no-schedule:NoSchedule`; the controller gives the
Job's pods that nodeSelector and a toleration for the taint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobset.api import constants as c
from jobset.api.types import namespaced_job_name

__all__ = [
    "add_node_selector_strategy",
    "exclusive_placement_annotations",
    "no_schedule_toleration",
    "uses_node_selector_strategy",
]


def _annotations(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def exclusive_placement_annotations(
    js: Mapping[str, Any], rjob: Mapping[str, Any]
) -> dict[str, str]:
    """The placement annotations a child Job of `rjob` (and its pods) must carry."""
    out: dict[str, str] = {}
    for source in (_annotations(js), _annotations(rjob.get("template"))):
        if c.EXCLUSIVE_KEY in source:
            out[c.EXCLUSIVE_KEY] = source[c.EXCLUSIVE_KEY]
            if c.NODE_SELECTOR_STRATEGY_KEY in source:
                out[c.NODE_SELECTOR_STRATEGY_KEY] = source[c.NODE_SELECTOR_STRATEGY_KEY]
    return out


def uses_node_selector_strategy(job: Mapping[str, Any]) -> bool:
    """Exclusive placement with the node-selector strategy is requested on this Job."""
    ann = _annotations(job)
    return c.EXCLUSIVE_KEY in ann and c.NODE_SELECTOR_STRATEGY_KEY in ann


def no_schedule_toleration() -> dict[str, str]:
    return {"key": c.NO_SCHEDULE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def add_node_selector_strategy(job: dict[str, Any]) -> None:
    """Pin the Job's pods to nodes labelled for it, and tolerate the nodes' taint."""
    meta = job["metadata"]
    pod_spec = job["spec"]["template"].setdefault("spec", {})
    selector = pod_spec.get("nodeSelector") or {}
    selector[c.NAMESPACED_JOB_KEY] = namespaced_job_name(meta["namespace"], meta["name"])
    pod_spec["nodeSelector"] = selector
    pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or []), no_schedule_toleration()]
