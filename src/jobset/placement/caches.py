"""The caches exclusive placement reads: JobSet pods indexed for the leader/follower rules,
and Nodes by name.

The pod informer lists only pods labelled `jobset.sigs.k8s.io/jobset-name` (a label
selector on the list/watch), so a cluster full of unrelated pods costs nothing; both pod
indexes keep only pods of JobSets using exclusive placement, as upstream's field indexes do:

- `placement-pod-name`: the pod name without the Job controller's random suffix
  (`<jobset>-<rjob>-<jobIndex>-<podIndex>`), to find a follower's leader;
- `placement-job-key`: the `jobset.sigs.k8s.io/job-key` label, to find a Job's pods.

A cached pod is a `PodRecord`: the pod as the API server sends it, with only what the
readers of this cache read (exclusive placement, the pod webhook and InPlaceRestart: the
whole metadata but managedFields, `spec.nodeName` and `nodeSelector`, `status.phase` and
`conditions`, each container status's name and `restartCount`). The watch decodes each
event straight into that shape (`decode_pod_event`: the rest of the pod - containers,
volumes, most of the status - is skipped by the parser, never built), so a pod event costs
a fraction of a full parse; a list's pods are cut to the same shape (`pod_record`). An
object of another shape (an ERROR event's Status, a field of an unexpected type) is parsed
in full and kept as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypedDict

import msgspec
import orjson

from jobset.api import constants as c
from jobset.placement.affinity import leader_pod_name, pod_name_without_suffix
from jobset.runtime.cache import Object, controller_of
from jobset.runtime.client import NODES, PODS
from jobset.runtime.informer import Informer
from jobset.runtime.manager import Manager

__all__ = [
    "JOBSET_POD_SELECTOR",
    "POD_JOB_KEY_INDEX",
    "POD_NAME_INDEX",
    "PlacementCaches",
    "index_pod_job_key",
    "index_pod_name",
    "node_informer",
    "pod_informer",
]

JOBSET_POD_SELECTOR: Final = c.JOBSET_NAME_KEY  # "exists"
POD_NAME_INDEX: Final = "placement-pod-name"
POD_JOB_KEY_INDEX: Final = "placement-job-key"


def _exclusive(pod: Mapping[str, Any]) -> bool:
    anns = (pod.get("metadata") or {}).get("annotations") or {}
    return c.EXCLUSIVE_KEY in anns


def index_pod_name(pod: Object) -> Sequence[str]:
    if not _exclusive(pod):
        return ()
    name = pod_name_without_suffix(str(pod["metadata"].get("name") or ""))
    return (name,) if name else ()


def index_pod_job_key(pod: Object) -> Sequence[str]:
    if not _exclusive(pod):
        return ()
    key = (pod["metadata"].get("labels") or {}).get(c.JOB_KEY)
    return (str(key),) if key else ()


POD_INDEXERS: Final = {POD_NAME_INDEX: index_pod_name, POD_JOB_KEY_INDEX: index_pod_job_key}


# What the pod cache keeps (module docstring). Every leaf is `Any`: it is kept as sent.
class _ObjectMeta(TypedDict, total=False):
    name: Any
    generateName: Any
    namespace: Any
    selfLink: Any
    uid: Any
    resourceVersion: Any
    generation: Any
    creationTimestamp: Any
    deletionTimestamp: Any
    deletionGracePeriodSeconds: Any
    labels: Any
    annotations: Any
    ownerReferences: Any
    finalizers: Any


class _PodSpec(TypedDict, total=False):
    nodeName: Any
    nodeSelector: Any


class _ContainerStatus(TypedDict, total=False):
    name: Any
    restartCount: Any


class _PodStatus(TypedDict, total=False):
    phase: Any
    conditions: Any
    containerStatuses: list[_ContainerStatus]
    initContainerStatuses: list[_ContainerStatus]


class PodRecord(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: _ObjectMeta
    spec: _PodSpec
    status: _PodStatus


class _PodEvent(TypedDict, total=False):
    type: Any
    object: PodRecord


_decoder: Final = msgspec.json.Decoder(_PodEvent)


def pod_record(pod: Object) -> Object:
    """The cache transform: the pod cut to a `PodRecord` (as it is when of another shape)."""
    try:
        record: Object = msgspec.convert(pod, PodRecord)
        return record
    except msgspec.ValidationError:
        return pod


def decode_pod_event(line: bytes) -> Object:
    """One pod watch event (`Informer`'s `watch_decode`): its type, and its object decoded
    as a `PodRecord` - what `orjson.loads` then `pod_record` give. An ERROR event (its
    object a Status) and a line of another shape are parsed by `orjson.loads` (which raises
    on a line that is no JSON), the object of the latter then cut by `pod_record`."""
    try:
        event: Object = _decoder.decode(line)  # type: ignore[assignment]
        if event.get("type") != "ERROR":
            return event
    except msgspec.DecodeError:  # ValidationError included: a shape of its own, parse it all
        pass
    event = orjson.loads(line)
    if isinstance(event, dict) and event.get("type") != "ERROR":
        obj = event.get("object")
        if isinstance(obj, dict):
            event["object"] = pod_record(obj)
    return event


def pod_informer(manager: Manager) -> Informer:
    """The manager's shared JobSet-pod informer, with the placement indexes added."""
    return manager.informer(
        PODS,
        label_selector=JOBSET_POD_SELECTOR,
        indexers=POD_INDEXERS,
        transform=pod_record,
        watch_decode=decode_pod_event,
    )


def node_informer(manager: Manager) -> Informer:
    """The manager's shared Node informer (cluster-scoped)."""
    return manager.informer(NODES)


def _live(pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    return not meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed")


class PlacementCaches:
    """Reads of the pod and node caches the placement rules need (no API calls)."""

    def __init__(self, pods: Informer, nodes: Informer) -> None:
        self.pods = pods
        self.nodes = nodes

    def node(self, name: str) -> Object | None:
        return self.nodes.store.get(name)

    def leader_for(self, follower: Mapping[str, Any], namespace: str) -> Object:
        """The live leader pod of the follower's Job; ValueError explains why there is none."""
        name = leader_pod_name(follower)
        found = [
            p
            for p in self.pods.store.by_index(POD_NAME_INDEX, name)
            if p["metadata"].get("namespace") == namespace and _live(p)
        ]
        if len(found) != 1:
            raise ValueError(
                f"expected 1 leader pod ({name}), but got {len(found)}. "
                "this is an expected, transient error"
            )
        leader = found[0]
        mine, theirs = controller_of(follower), controller_of(leader)
        if mine is None:
            raise ValueError("follower pod has no owner reference")
        if theirs is None:
            raise ValueError(f'leader pod "{leader["metadata"]["name"]}" has no owner reference')
        if mine.get("uid") != theirs.get("uid"):
            raise ValueError(
                f"follower pod owner UID ({mine.get('uid')}) != leader pod owner UID "
                f"({theirs.get('uid')})"
            )
        return leader

    def topology_of_node(self, node_name: str, topology_key: str) -> str:
        """The domain of a node; ValueError when the node or its label is missing."""
        node = self.node(node_name)
        if node is None:
            raise ValueError(f'nodes "{node_name}" not found')
        value = (node["metadata"].get("labels") or {}).get(topology_key)
        if value is None:
            raise ValueError(f"node does not have topology label: {topology_key}")
        return str(value)

    def pods_of_job(self, namespace: str, job_key: str, owner_uid: str) -> list[Object]:
        return [
            p
            for p in self.pods.store.by_index(POD_JOB_KEY_INDEX, job_key)
            if p["metadata"].get("namespace") == namespace
            and (controller_of(p) or {}).get("uid") == owner_uid
        ]
