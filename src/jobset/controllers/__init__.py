"""The JobSet reconciler: observe (cache) → plan (pure) → act (API writes) → one status write.

- `classify`: child Jobs into previous / active / succeeded / failed; replicatedJobsStatus.
- `conditions`: the status being built in one pass, condition transitions, queued events.
- `restart_policy`, `success_policy`, `startup`, `ttl`: the JobSet policies.
- `jobs`, `network`, `volumes`: the child objects the JobSet owns.
- `plan`: the pure planner joining all of the above into a `Plan`.
- `metrics`: the JobSet metrics (`jobset_*`), on the manager's registry.
- `jobset_controller`: the wiring onto `jobset.runtime` (informers, workers, writes).
"""
