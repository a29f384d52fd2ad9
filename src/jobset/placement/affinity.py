"""Upstream's affinity strategy, as pure functions on Pod dicts.

The leader pod of each child Job (completion index 0) gets:

- a required pod affinity to pods with its own `jobset.sigs.k8s.io/job-key`, so its Job's
  pods share its domain - pods of its own namespace only (no `namespaceSelector`, unlike
  upstream's `{}`): the key is a predictable hash, and a pod of another namespace carrying a
  victim's key must not pull the victim's leader into a domain of its choosing;
- a required pod anti-affinity to pods with another job-key at the same priority (label
  `jobset.sigs.k8s.io/priority`), so no other Job's pods share it - in every namespace, as
  upstream: exclusivity between tenants is the point. A pod can only repel with a key and
  priority it really has: the validating pod webhook refuses placement labels that do not
  match the pod's own Job and priority (`jobset.webhooks.pod_webhook`).

Followers get no affinity: once the leader is bound, they get a nodeSelector
`<topologyKey>: <the leader's domain>`; until then the validating webhook rejects them and
the Job controller retries (a transient, expected error). Only the leader's placement
costs an inter-pod affinity search, but every Job's start is serialized behind it.
The pod webhooks (`jobset.webhooks.pod_webhook`) and the pod reconciler
(`pod_controller.py`) apply these rules using the caches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from jobset.api import constants as c

__all__ = [
    "LEADER_NOT_SCHEDULED_MSG",
    "add_exclusive_affinities",
    "exclusive_affinity",
    "follower_topology",
    "is_leader_pod",
    "is_scheduled",
    "leader_pod_name",
    "pod_name_without_suffix",
    "priority_of",
]

LEADER_NOT_SCHEDULED_MSG: Final = (
    "leader pod not yet scheduled, not creating follower pod. this is an expected, transient error"
)


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    return meta if isinstance(meta, dict) else {}


def is_leader_pod(pod: Mapping[str, Any]) -> bool:
    """Completion index 0 (upstream reads the annotation, not the label)."""
    anns = _meta(pod).get("annotations") or {}
    return anns.get(c.JOB_COMPLETION_INDEX_ANNOTATION) == "0"


def is_scheduled(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def leader_pod_name(pod: Mapping[str, Any]) -> str:
    """`<jobset>-<rjob>-<jobIndex>-0`: the leader's name without its random suffix.

    Built from the follower's labels, since a pod created with generateName has no name
    yet when admission runs. Raises ValueError naming the missing label.
    """
    labels = _meta(pod).get("labels") or {}
    parts = []
    for key in (c.JOBSET_NAME_KEY, c.REPLICATED_JOB_NAME_KEY, c.JOB_INDEX_KEY):
        value = labels.get(key)
        if not isinstance(value, str):
            raise ValueError(f"pod missing label: {key}")
        parts.append(value)
    return "-".join([*parts, "0"])


def pod_name_without_suffix(name: str) -> str | None:
    """`a-b-0-0-xk2p9` → `a-b-0-0`; None when the name cannot be a JobSet pod's (fewer
    than five dash-separated parts: jobset, replicatedJob, job index, pod index, suffix)."""
    parts = name.split("-")
    if len(parts) < 5:
        return None
    return "-".join(parts[:-1])


def exclusive_affinity(
    affinity: Mapping[str, Any] | None, job_key: str, priority: str, topology_key: str
) -> dict[str, Any]:
    """`affinity` (a pod's, possibly None) plus the leader's required affinity to its own
    job-key and anti-affinity to other job-keys of its priority; a new dict."""
    out: dict[str, Any] = dict(affinity) if isinstance(affinity, Mapping) else {}
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    pod_affinity = dict(out.get("podAffinity") or {})
    anti = dict(out.get("podAntiAffinity") or {})
    pod_affinity[required] = [
        *(pod_affinity.get(required) or []),
        {
            "labelSelector": {
                "matchExpressions": [{"key": c.JOB_KEY, "operator": "In", "values": [job_key]}]
            },
            "topologyKey": topology_key,
            # No namespaceSelector: the pod's own namespace (see the module docstring).
        },
    ]
    anti[required] = [
        *(anti.get(required) or []),
        {
            "labelSelector": {
                "matchExpressions": [
                    {"key": c.JOB_KEY, "operator": "Exists"},
                    {"key": c.JOB_KEY, "operator": "NotIn", "values": [job_key]},
                    {"key": c.PRIORITY_KEY, "operator": "In", "values": [priority]},
                ]
            },
            "topologyKey": topology_key,
            "namespaceSelector": {},
        },
    ]
    out["podAffinity"] = pod_affinity
    out["podAntiAffinity"] = anti
    return out


def add_exclusive_affinities(pod: dict[str, Any], topology_key: str) -> None:
    """Append the leader's required affinity and anti-affinity terms (in place)."""
    labels = pod.setdefault("metadata", {}).get("labels") or {}
    spec = pod.setdefault("spec", {})
    spec["affinity"] = exclusive_affinity(
        spec.get("affinity"),
        str(labels.get(c.JOB_KEY, "")),
        str(labels.get(c.PRIORITY_KEY, "")),
        topology_key,
    )


def follower_topology(pod: Mapping[str, Any], topology_key: str) -> str | None:
    """The domain a follower's nodeSelector pins it to (None: not pinned)."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    value = selector.get(topology_key)
    return value if isinstance(value, str) else None


def priority_of(pod: Mapping[str, Any]) -> str | None:
    """The pod's resolved priority as a label value (None when the API server set none)."""
    priority = (pod.get("spec") or {}).get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool):
        return str(priority)
    return None
