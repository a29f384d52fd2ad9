"""The simulated Kubernetes cluster: an API server plus simulated controllers, scheduler and kubelet.

It speaks only HTTP(S) to its clients and imports nothing of the controller side. It ships as
its own distribution, `kubesim` (packaging/kubesim), whose `kubesim serve` runs the server
`jobset sim` runs (`serve.py`, `cli.py`).
"""

from kubeutil.distribution import installed_version

# /version reports the simulator's own distribution's version.
__version__ = installed_version("kubesim")
