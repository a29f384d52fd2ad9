"""The simulated scheduler's CPU per pod, in process: no API server, no event loop.

Schedules `--pods` pods shaped as `pod_scale`'s (one-CPU pods of 8-pod Indexed Jobs, with
the labels and default tolerations the API server and the Job controller give them) against
`pod_scale`'s node pool, the way the scheduler loop does: batches of `BATCH_SIZE` pods, each
pod's `schedule()`, its kube-scheduler cost and the assumption, then the binding's watch
event (a new bound object) fed back to the snapshot. Prints the CPU milliseconds per
pod, and a digest of where every pod went, so a change to the filter, score or snapshot can
be measured, and checked to place alike, without the rest of the simulator's noise:

    .venv/bin/python -m benchmarks.sched_micro --pods 16000
    .venv/bin/python -m benchmarks.sched_micro --pods 50000 --profile /tmp/sched.prof
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import random
import time
from typing import Any

from benchmarks.pod_scale import PODS_PER_JOB, node_spec, nodes_for
from kubesim.controllers.scheduler.cost import kube_scheduler_evaluations
from kubesim.controllers.scheduler.loop import BATCH_SIZE
from kubesim.controllers.scheduler.scheduling import FilterScan, schedule
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot
from kubesim.nodespec import parse_node_spec

_TOLERATIONS = [
    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def job_pod(job: int, index: int) -> dict[str, Any]:
    """A pod as the Job controller creates it for a JobSet's Indexed Job, after defaulting."""
    job_name = f"scale-w-{job}"
    uid = f"00000000-0000-0000-0000-{job:012d}"
    labels = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": job_name,
        "controller-uid": uid,
        "job-name": job_name,
        "batch.kubernetes.io/job-completion-index": str(index),
        "jobset.sigs.k8s.io/jobset-name": "scale",
        "jobset.sigs.k8s.io/replicatedjob-name": "w",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/job-index": str(job),
        "jobset.sigs.k8s.io/job-global-index": str(job),
        "jobset.sigs.k8s.io/job-key": f"{job:040x}",
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job_name}-{index}-abcde",
            "namespace": "bench",
            "uid": f"{job:08d}-{index:04d}",
            "labels": labels,
        },
        "spec": {
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [dict(t) for t in _TOLERATIONS],
            "containers": [{"name": "trainer", "image": "trainer:v1", "resources": resources}],
        },
        "status": {"phase": "Pending"},
    }


def run(pods: int, seed: int = 0) -> dict[str, Any]:
    """Schedule `pods` pods; returns the CPU seconds and what was placed."""
    snap = ClusterSnapshot()
    for node_obj in parse_node_spec(node_spec(nodes_for(pods)), now="2026-01-01T00:00:00Z"):
        snap.add_node(node_obj)
    rng = random.Random(seed)
    todo = [job_pod(j, i) for j in range(-(-pods // PODS_PER_JOB)) for i in range(PODS_PER_JOB)]
    todo = todo[:pods]
    placed: dict[str, str] = {}
    cpu0 = time.process_time()
    for start in range(0, len(todo), BATCH_SIZE):
        bound: list[tuple[dict[str, Any], str]] = []
        for pod in todo[start : start + BATCH_SIZE]:
            scan = FilterScan()
            node, _message = schedule(pod, snap, rng, scan=scan)
            kube_scheduler_evaluations(pod, snap, scan)
            if node is not None:
                snap.assume(pod, node)
                bound.append((pod, node))
        for pod, node in bound:  # the binding's watch event: a new object, bound
            snap.add_pod({**pod, "spec": {**pod["spec"], "nodeName": node}})
            placed[pod["metadata"]["name"]] = node
    cpu = time.process_time() - cpu0
    # Equal digests: the same pods on the same nodes (compare two branches with it).
    digest = hashlib.sha256(json.dumps(sorted(placed.items())).encode()).hexdigest()[:16]
    return {
        "pods": pods,
        "nodes": len(snap.nodes),
        "placed": len(placed),
        "cpu_seconds": round(cpu, 3),
        "cpu_ms_per_pod": round(cpu * 1000 / pods, 4),
        "placement_digest": digest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=16_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", help="write a cProfile of the run to this file")
    args = parser.parse_args()
    if args.profile:
        prof = cProfile.Profile()
        result = prof.runcall(run, args.pods, args.seed)
        prof.dump_stats(args.profile)
    else:
        result = run(args.pods, args.seed)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
