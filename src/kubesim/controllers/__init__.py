"""The simulated kube-controller-manager and kube-scheduler: loops that watch the store and write.

Each controller reads store events through `kubesim.apiserver.apicore.ApiCore` and writes
back through it, as a real controller does through the API server:

- `job.py` - the Job controller (batch/v1): pods for Jobs, Job status and conditions. Its
  decision for one sync is pure, in `jobplan.py` (testable without a server); the facts it
  reads about Jobs and pods (indexes, failure and success policies, conditions) are
  `jobpolicy.py`.
- `workqueue.py` - client-go style work queue and one-timer-for-many-keys, shared with the
  simulated kubelet.
- `gc.py` - garbage collection by ownerReferences, and namespace teardown.
- `scheduler/` - kube-scheduler: `scheduling.py` decides (pure), `loop.py` binds.
"""
