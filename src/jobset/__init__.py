"""jobset-py: a JobSet controller for Kubernetes, in asyncio Python.

Where each concept lives (imports go only downwards in this list; `.importlinter` enforces it):

* `cli`: the `jobset` console script: parses, then hands each sub-command to its home below;
* `commands/`: the user commands (`jobset get/describe/watch/tree/submit/delete`);
* `dev/`: `jobset sim` and `jobset dev` (the simulated cluster from `kubesim`), the demo,
  the examples' outcome checks;
* `wiring`: the product assembled on a runtime Manager and run: `jobset controller`;
* `controllers/`: the JobSet reconciler (observe -> plan -> act -> status), its policies,
  the Job cache record, the CRD installer, the JobSet metrics; `webhooks/`: admission
  server and webhooks; `sdk/`: typed models, builders and a client for Python users;
* `placement/`: exclusive topology placement;
* `resources`: the JobSet resource (`JOBSETS`) as the client addresses it (the core kinds
  are in `runtime/client.py`);
* `api/`: the JobSet API: types, constants, defaulting, validation, presets (pure);
* `runtime/`: the controller runtime (client, informers, workqueue, manager, leader
  election); knows nothing of JobSets;
* `data/`: files the commands read (CRD, examples), shipped in the wheel.

Metrics live with what they measure: `runtime/metrics.py` (controller-runtime / client-go
names), `controllers/metrics.py` (the JobSet metrics).

The simulated cluster is its own package, `kubesim`; helpers both use are in `kubeutil`.
"""

from kubeutil.distribution import installed_version

# The distribution `jobset-py`'s version (one source: pyproject.toml; see kubeutil.distribution).
__version__ = installed_version()
