"""The simulated kube-controller-manager and kube-scheduler: loops that watch the store and write.

Each controller reads store events through `kubesim.apiserver.core.apicore.ApiCore` and writes
back through it, as a real controller does through the API server:

- `job.py` - the Job controller (batch/v1): pods for Jobs, Job status and conditions. Its
  decision for one sync is pure, in `jobplan.py` (testable without a server); the facts it
  reads about Jobs and pods (indexes, failure and success policies, conditions) are
  `jobpolicy.py`; level `jobs` (Jobs advance by status alone, no pods) is `jobsim.py`.
- `gc.py` - garbage collection by ownerReferences, and namespace teardown.
- `scheduler/` - kube-scheduler: `scheduling.py` decides (pure, over `snapshot.py`), `loop.py`
  binds.
- `deployment.py`, `replicaset.py` - apps/v1 Deployments (RollingUpdate, Recreate, revisions,
  conditions) and ReplicaSets (pods with controller references, adoption, deletion ranking);
  their decisions are pure, in `rollout.py`.
- `endpoints.py` - core/v1 Endpoints (truncated at 1,000 addresses) and discovery.k8s.io/v1
  EndpointSlices from the ready pods behind each Service's selector, and `resolve_service`:
  how the API server reaches a Service (admission webhooks). Which slices a sync creates,
  updates and deletes (at most 100 endpoints a slice, only changed slices written) is pure,
  in `endpointslices.py`.
- `disruption.py` - policy/v1 PodDisruptionBudget status, and the pods/eviction subresource
  that honours it (`kubectl drain`).

The work queue, the Events sink and the store-listener-plus-work-queue loop these share with
the kubelet are in `kubesim.base`, the layer below both.
"""
