"""The simulated kube-scheduler.

- `scheduling.py` - the decision, pure functions over a `ClusterSnapshot`: filters in
  kube-scheduler's order and its "0/N nodes are available" message.
- `loop.py` - the loop that keeps the snapshot current from watch events and writes bindings.
"""
