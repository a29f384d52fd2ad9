"""The kube-scheduler cost model at upstream's placement topology, without an API server.

`benchmarks/placement.py` runs the whole stack (controller, webhooks, simulated cluster), so
on 2 cores it runs at 64 domains x 8 pods. This script feeds the simulator's scheduler
(`kubesim.controllers.scheduler`) directly, in one process, with pods shaped as each
strategy's webhooks leave them, at upstream's measured size (250 Jobs x 15 pods on 5,000
nodes, 20 per domain). It sums what kube-scheduler would have evaluated
(`scheduler/cost.py`). It takes seconds, because the simulated scheduler answers from
counters. What kube-scheduler would do is counted, not done.

- `none`: plain pods;
- `affinity`: each Job's leader (index 0) with the exclusive pod affinity and anti-affinity
  terms, scheduled before the followers (the webhook admits followers only once their
  leader is bound), the followers with a nodeSelector for their leader's domain;
- `pinned`: every pod with a nodeSelector for its Job's domain (the node-selector and
  planned strategies both leave pods like this).

    .venv/bin/python -m benchmarks.placement_model --jobs 250 --pods 15 --nodes-per-domain 20

Prints one JSON object per strategy and the ratios to `none`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any

from kubesim.controllers.scheduler.cost import ZERO, SchedulingCost, kube_scheduler_evaluations
from kubesim.controllers.scheduler.scheduling import FilterScan, schedule
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot

POOL_KEY = "cloud.google.com/gke-nodepool"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
STRATEGIES = ("none", "affinity", "pinned")


def _node(name: str, pool: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {POOL_KEY: pool, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
    }


def _pod(job: str, index: int, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    return {
        "metadata": {"name": f"{job}-{index}", "namespace": "default", "labels": {JOB_KEY: job}},
        "spec": {"containers": [container], **spec},
    }


def _exclusive_affinity(job: str) -> dict[str, Any]:
    own = {"matchExpressions": [{"key": JOB_KEY, "operator": "In", "values": [job]}]}
    others = {
        "matchExpressions": [
            {"key": JOB_KEY, "operator": "Exists"},
            {"key": JOB_KEY, "operator": "NotIn", "values": [job]},
        ]
    }
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    return {
        "podAffinity": {required: [{"labelSelector": own, "topologyKey": POOL_KEY}]},
        "podAntiAffinity": {required: [{"labelSelector": others, "topologyKey": POOL_KEY}]},
    }


def run(strategy: str, jobs: int, pods: int, per_domain: int) -> SchedulingCost:
    snap = ClusterSnapshot()
    for d in range(jobs):
        for i in range(per_domain):
            snap.add_node(_node(f"d{d}-n{i}", f"pool-{d}"))
    rng = random.Random(0)
    total = ZERO
    leader_domain: dict[str, str] = {}
    order = [(j, 0) for j in range(jobs)] + [(j, i) for j in range(jobs) for i in range(1, pods)]
    for j, i in order:
        job = f"job{j}"
        if strategy == "none":
            pod = _pod(job, i)
        elif strategy == "affinity" and i == 0:
            pod = _pod(job, i, affinity=_exclusive_affinity(job))
        elif strategy == "affinity":
            pod = _pod(job, i, nodeSelector={POOL_KEY: leader_domain[job]})
        else:
            pod = _pod(job, i, nodeSelector={POOL_KEY: f"pool-{j}"})
        scan = FilterScan()
        name, message = schedule(pod, snap, rng, scan=scan)
        total += kube_scheduler_evaluations(pod, snap, scan)
        if name is None:
            raise RuntimeError(f"{strategy}: {job}-{i} did not fit: {message}")
        snap.assume(pod, name)
        if i == 0:
            leader_domain[job] = snap.nodes[name].labels[POOL_KEY]
    return total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jobs", type=int, default=250, help="Jobs, one domain each")
    p.add_argument("--pods", type=int, default=15, help="pods per Job")
    p.add_argument("--nodes-per-domain", type=int, default=20)
    args = p.parse_args(argv)
    n = args.jobs * args.pods
    results = {s: run(s, args.jobs, args.pods, args.nodes_per_domain) for s in STRATEGIES}
    base = results["none"].total
    for strategy, cost in results.items():
        row = {
            "strategy": strategy,
            "pods": n,
            "nodes": args.jobs * args.nodes_per_domain,
            "evaluations_per_pod": round(cost.total / n, 1),
            "term_tests_per_pod": round(cost.affinity_checks / n, 1),
            "filter_calls_per_pod": round(cost.filter_calls / n, 1),
            "evaluations_ratio_to_none": round(cost.total / base, 2) if base else None,
            "kube_scheduler_evaluations": cost.as_dict(),
        }
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
