"""The Pod admission webhooks of exclusive placement (upstream's `mpod.kb.io` / `vpod.kb.io`).

Mutating, on create of a JobSet pod (annotation `jobset.sigs.k8s.io/jobset-name`):

- every JobSet pod whose Job uses environment presets (`jobset.api.presets`): the rank label
  `presets.jobset-py.dev/rank` = the Job's rank offset + the pod's completion index, which the
  preset env vars (`RANK`, `NODE_RANK`, `JAX_PROCESS_ID`...) read through the downward API;
- node-selector strategy: nothing more (the Job's template already pins it);
- every other JobSet pod: the label `jobset.sigs.k8s.io/priority` = its resolved priority,
  so exclusive leaders of that priority keep out of its domain;
- planned strategy: nothing more (the Job's template carries the planned nodeSelector);
- affinity strategy: the leader gets the exclusive affinities; a follower whose leader is
  bound gets `nodeSelector[<topologyKey>] = <leader's domain>`.

Validating, on create: a follower of the affinity strategy is rejected until it has that
nodeSelector and its leader is bound - a transient error the Job controller retries.

Validating, on create and on updates that change labels, of every pod carrying the
`jobset.sigs.k8s.io/job-key` label (not only JobSet pods; this project, not upstream): the
placement labels the exclusive affinities select on must be the pod's own. The job-key must
be the key of the Job that controls the pod, in the pod's namespace (`job_key(namespace,
job)`), and `jobset.sigs.k8s.io/priority`, when the API server resolved the pod's priority,
must be that priority. Otherwise anyone who may create a pod could label it with another
tenant's (predictable) key, or a priority it does not run at, and steer or block that
tenant's exclusive placement (docs/reliability.md, "Threat model").

The mutating webhook reads only the caches (JobSet pods by name, Nodes), like upstream's
cached client, and so does the validating one, so a pod creation costs no API call. The
mutating configuration's objectSelector on the `jobset-name` label sends it only JobSet
pods; the validating one's, on `job-key`, sends it JobSet pods and anything pretending to
be one, never unrelated pods, and its matchCondition skips updates that leave the labels
alone (the Job controller's finalizer removals, for one).
"""

from __future__ import annotations

from typing import Any

from jobset.api import constants as c
from jobset.api.presets import pod_rank_labels
from jobset.api.types import job_key
from jobset.placement.affinity import (
    LEADER_NOT_SCHEDULED_MSG,
    exclusive_affinity,
    is_leader_pod,
    is_scheduled,
    priority_of,
)
from jobset.placement.caches import PlacementCaches
from jobset.placement.strategy import annotations_of, strategy_of, topology_key_of
from jobset.runtime.logging import get_logger
from jobset.webhooks.review import AdmissionRequest, AdmissionResponse

__all__ = ["PodWebhook", "placement_label_problem"]


def _pointer(key: str) -> str:
    """A map key as a JSON-pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _is_jobset_pod(pod: dict[str, Any]) -> bool:
    return c.JOBSET_NAME_KEY in annotations_of(pod)


def _readable(pod: dict[str, Any]) -> bool:
    meta, spec = pod.get("metadata"), pod.get("spec")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return False
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is not None and not isinstance(value, dict):
            return False
    for key in ("nodeSelector", "affinity"):
        value = spec.get(key)
        if value is not None and not isinstance(value, dict):
            return False
    return True


def placement_label_problem(pod: dict[str, Any], namespace: str) -> str | None:
    """Why the pod may not carry its placement labels (None: it may, or carries none).

    The messages name only the pod's own labels and owner, nothing about other objects.
    """
    labels = (pod.get("metadata") or {}).get("labels") or {}
    key = labels.get(c.JOB_KEY)
    if key is None:
        return None
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    owner = next(
        (r for r in refs if isinstance(r, dict) and r.get("controller") is True),
        None,
    )
    if (
        owner is None
        or owner.get("kind") != "Job"
        or str(owner.get("apiVersion") or "").split("/")[0] != "batch"
        or not isinstance(owner.get("name"), str)
    ):
        return (
            f"label {c.JOB_KEY} is reserved for pods of JobSet Jobs: "
            "this pod is not controlled by a Job"
        )
    if key != job_key(namespace, owner["name"]):
        return (
            f"label {c.JOB_KEY} must be the key of the pod's own Job "
            f"({owner['name']} in namespace {namespace})"
        )
    priority = priority_of(pod)
    label = labels.get(c.PRIORITY_KEY)
    if label is not None and priority is not None and label != priority:
        return f"label {c.PRIORITY_KEY} must be the pod's priority ({priority})"
    return None


def _label_ops(meta: dict[str, Any], wanted: dict[str, str]) -> list[dict[str, Any]]:
    """JSON-patch operations giving the pod the `wanted` labels it does not carry yet."""
    labels = meta.get("labels")
    missing = {
        k: v for k, v in wanted.items() if not isinstance(labels, dict) or labels.get(k) != v
    }
    if not missing:
        return []
    if not isinstance(labels, dict):
        return [{"op": "add", "path": "/metadata/labels", "value": missing}]
    return [
        {"op": "add", "path": f"/metadata/labels/{_pointer(k)}", "value": v}
        for k, v in missing.items()
    ]


class PodWebhook:
    """Handlers for `/mutate--v1-pod` and `/validate--v1-pod`."""

    def __init__(self, caches: PlacementCaches) -> None:
        self.caches = caches
        self.log = get_logger("pod-webhook")

    async def mutate(self, req: AdmissionRequest) -> AdmissionResponse:
        pod = req.object
        if req.operation != "CREATE" or pod is None or not _is_jobset_pod(pod):
            return AdmissionResponse.allow()
        if not _readable(pod):
            return AdmissionResponse.errored(400, "cannot decode Pod")
        # The patch is written by hand, not diffed: this runs for every JobSet pod created,
        # and a deep copy plus a JSON diff of each pod would cost more than the rest.
        meta, spec = pod["metadata"], pod["spec"]
        labels = meta.get("labels") or {}
        wanted = pod_rank_labels(pod)
        strategy = strategy_of(pod)
        priority = priority_of(pod) if strategy != "node-selector" else None
        if priority is not None:
            wanted[c.PRIORITY_KEY] = priority
        ops = _label_ops(meta, wanted)
        if strategy == "node-selector":
            return AdmissionResponse(True, patch=ops or None)
        topology_key = topology_key_of(pod)
        if strategy == "affinity" and topology_key is not None:
            if is_leader_pod(pod):
                affinity = exclusive_affinity(
                    spec.get("affinity"),
                    str(labels.get(c.JOB_KEY, "")),
                    priority if priority is not None else str(labels.get(c.PRIORITY_KEY, "")),
                    topology_key,
                )
                ops.append({"op": "add", "path": "/spec/affinity", "value": affinity})
            else:
                try:
                    domain = self._leader_domain(pod, req.namespace, topology_key)
                except ValueError as err:
                    # Upstream: an unscheduled or missing leader is left to the validating
                    # webhook (which rejects the follower); an unreadable domain is an error.
                    return AdmissionResponse.deny(str(err))
                if domain is not None:
                    selector = {**(spec.get("nodeSelector") or {}), topology_key: domain}
                    ops.append({"op": "add", "path": "/spec/nodeSelector", "value": selector})
        return AdmissionResponse(True, patch=ops or None)

    def _leader_domain(
        self, follower: dict[str, Any], namespace: str, topology_key: str
    ) -> str | None:
        try:
            leader = self.caches.leader_for(follower, namespace)
        except ValueError:
            return None
        if not is_scheduled(leader):
            return None
        return self.caches.topology_of_node(str(leader["spec"]["nodeName"]), topology_key)

    async def validate(self, req: AdmissionRequest) -> AdmissionResponse:
        pod = req.object
        if req.operation not in ("CREATE", "UPDATE") or pod is None:
            return AdmissionResponse.allow()
        if not _readable(pod) or not isinstance(pod["metadata"].get("ownerReferences") or [], list):
            return AdmissionResponse.errored(400, "cannot decode Pod")
        namespace = req.namespace or str(pod["metadata"].get("namespace") or "")
        problem = placement_label_problem(pod, namespace)
        if problem is not None:
            return AdmissionResponse.deny(problem)
        if req.operation != "CREATE" or not _is_jobset_pod(pod):
            return AdmissionResponse.allow()
        topology_key = topology_key_of(pod)
        if strategy_of(pod) != "affinity" or topology_key is None or is_leader_pod(pod):
            return AdmissionResponse.allow()
        selector = pod["spec"].get("nodeSelector")
        if not selector:
            return AdmissionResponse.deny("follower pod node selector not set")
        if topology_key not in selector:
            return AdmissionResponse.deny(
                "follower pod node selector for topology domain not found. "
                f"missing selector: {topology_key}"
            )
        try:
            leader = self.caches.leader_for(pod, req.namespace)
        except ValueError as err:
            return AdmissionResponse.deny(str(err))
        if not is_scheduled(leader):
            return AdmissionResponse.deny(LEADER_NOT_SCHEDULED_MSG)
        return AdmissionResponse.allow()
