"""The simulated kube-scheduler.

- `scheduling.py` - the decision, pure functions over a `ClusterSnapshot`: `schedule()` runs the
  filters in kube-scheduler's order and words its "0/N nodes are available" message;
  `needs_scheduling`.
- `snapshot.py` - `ClusterSnapshot` and `NodeInfo`: nodes and bound pods, indexed for the filters.
- `affinity.py` - label selectors, node affinity and pod (anti-)affinity terms, per-domain counts.
- `resources.py` - quantities as units, a pod's effective requests, the default allocatable.
- `cost.py` - what kube-scheduler would have evaluated for each pod (affinity term tests,
  filter calls), counted from the snapshot's totals; the loop serves the sums at
  `/debug/scheduler`.
- `loop.py` - the loop that keeps the snapshot current from watch events and writes bindings.
- `gang.py` - Workload-Aware Scheduling: the pods of a PodGroup decided together (gang
  scheduling, topology domains, preemption of lower groups), used by the loop.

Scale is the reason for the shape of `ClusterSnapshot`: JobSet's exclusive placement gives every
pod a required pod affinity *and* anti-affinity term, and benchmarks bind ~10k such pods onto
thousands of nodes. kube-scheduler answers those terms from per-topology-domain counts; so does
the snapshot. Bound pods are indexed by namespace and label, and, per topology key in use, by
domain, so a term is answered in time proportional to the distinct label values involved rather
than to the number of pods. Nodes are indexed by label, so a pod whose affinity or nodeSelector
pins it to a domain only examines that domain's nodes. kube-scheduler does far more work for
the same pods, so `cost.py` counts that work. Benchmarks compare placement strategies on the
count, because this scheduler's time does not show it.
"""
