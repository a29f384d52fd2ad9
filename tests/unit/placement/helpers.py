"""Informers fed by hand (no API server): `replace` / `apply` are what a reflector calls."""

from __future__ import annotations

from typing import Any

from jobset.api import constants as c
from jobset.runtime.client import JOBS, Resource
from jobset.runtime.informer import Informer

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
JOBSETS = Resource(c.GROUP, c.VERSION, c.PLURAL, c.KIND)
POOL = "cloud.google.com/gke-nodepool"
# The JobSets `owners()` caches by default: every owner name the planner tests use.
OWNER_NAMES = (
    *("a", "b", "c", "old", "new", "low", "high", "low2", "small", "big", "other"),
    *(f"js{k}" for k in range(12)),
)


def informer(resource: Resource, objects: list[dict[str, Any]] | None = None) -> Informer:
    inf = Informer(None, resource)  # type: ignore[arg-type]  # never started
    inf.replace(list(objects or []), "1")
    return inf


def owner_uid(jobset: str, namespace: str = "default") -> str:
    return f"uid-{namespace}-{jobset}"


def a_jobset(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": owner_uid(name, namespace),
            "resourceVersion": "1",
        },
    }


def owners(*names: str, namespace: str = "default") -> Informer:
    """A JobSet cache holding the owners of the test Jobs (by default every name used)."""
    return informer(JOBSETS, [a_jobset(n, namespace) for n in names or OWNER_NAMES])


def node(
    name: str,
    pool: str | None,
    *,
    cpu: str = "8",
    ready: bool = True,
    taints: list[dict[str, str]] | None = None,
    labels: dict[str, str] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    meta_labels = dict(labels or {})
    if pool is not None:
        meta_labels[POOL] = pool
    return {
        "metadata": {"name": name, "labels": meta_labels, "resourceVersion": "1"},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pools(n: int, nodes_each: int = 2, **kw: Any) -> list[dict[str, Any]]:
    return [node(f"p{p}-n{i}", f"pool-{p}", **kw) for p in range(n) for i in range(nodes_each)]


def job(
    jobset: str,
    index: int,
    *,
    pods: int = 2,
    cpu: str = "1",
    namespace: str = "default",
    priority: int | None = None,
    annotations: dict[str, str] | None = None,
    pod_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]
    }
    if priority is not None:
        spec["priority"] = priority
    spec.update(pod_spec or {})
    anns = {
        c.EXCLUSIVE_KEY: POOL,
        "placement.jobset.x-k8s.io/strategy": "planned",
        **(annotations or {}),
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{jobset}-w-{index}",
            "namespace": namespace,
            "labels": {c.JOBSET_NAME_KEY: jobset},
            "annotations": anns,
            "ownerReferences": [
                {
                    "apiVersion": c.API_VERSION,
                    "kind": c.KIND,
                    "name": jobset,
                    "uid": owner_uid(jobset, namespace),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {"metadata": {}, "spec": spec},
        },
    }


def stored(
    created: dict[str, Any], rv: int = 2, uid: str = "", when: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    """The Job as the cache shows it once created (metadata filled in by the server)."""
    out = {
        **created,
        "metadata": {
            **created["metadata"],
            "resourceVersion": str(rv),
            "uid": uid or created["metadata"]["name"],
            "creationTimestamp": when,
        },
    }
    return out


def finished(job: dict[str, Any], rv: int = 3) -> dict[str, Any]:
    out = {**job, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    out["metadata"] = {**job["metadata"], "resourceVersion": str(rv)}
    return out


JOB_RESOURCE = JOBS
