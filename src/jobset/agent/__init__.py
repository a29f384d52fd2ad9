"""`jobset in-place-restart-agent`: the in-pod agent of InPlaceRestart (KEP-467).

It runs in every worker pod of a JobSet whose `failurePolicy.restartStrategy` is
`InPlaceRestart`, with the pod's ServiceAccount (in-cluster config), and speaks to the
controller only through the API server (`jobset.controllers.in_place_restart` has the
protocol): it writes its pod's `jobset.sigs.k8s.io/in-place-restart-attempt` annotation and
watches its JobSet's `status.previousInPlaceRestartAttempt` / `currentInPlaceRestartAttempt`.

- `decide.py`: what the agent does on each view of its JobSet (pure);
- `environment.py`: upstream's environment contract, checked;
- `run.py`: the process: the JobSet watch, the pod patch, the barrier (startup-probe HTTP
  endpoint in sidecar mode, the worker command in main-container mode), exit codes.
"""
