"""Simulated kube-controller-manager controllers for workloads and networking.

- `deployment.py`, `replicaset.py`: apps/v1 Deployments (RollingUpdate, Recreate, revisions,
  conditions) and ReplicaSets (pods with controller references, adoption, deletion ranking);
  their decisions are the pure functions of `rollout.py`.
- `endpoints.py`: core/v1 Endpoints and discovery.k8s.io/v1 EndpointSlices from the ready pods
  behind each Service's selector, and `resolve_service`, how the API server reaches a Service
  (admission webhooks).
- `disruption.py`: policy/v1 PodDisruptionBudget status, and the pods/eviction subresource
  that honours it (`kubectl drain`).

`base.py` holds the store-listener-plus-work-queue loop they share. Nothing here imports the
JobSet controller.
"""
