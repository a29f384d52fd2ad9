"""The simulated Kubernetes cluster: an API server plus simulated controllers, scheduler and kubelet.

It speaks only HTTP(S) to its clients and imports nothing of the controller side.
"""

from kubeutil.distribution import installed_version

# The simulator ships in the same distribution as the controller; /version reports it.
__version__ = installed_version()
