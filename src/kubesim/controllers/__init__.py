"""The simulated kube-controller-manager and kube-scheduler: loops that watch the store and write.

Each controller reads store events through `kubesim.apiserver.apicore.ApiCore` and writes
back through it, as a real controller does through the API server:

- `job.py` - the Job controller (batch/v1): pods for Jobs, Job status and conditions.
- `gc.py` - garbage collection by ownerReferences, and namespace teardown.
- `scheduler/` - kube-scheduler: `scheduling.py` decides (pure), `loop.py` binds.
"""
