"""The simulated Kubernetes cluster: an API server plus simulated controllers, scheduler and kubelet.

It speaks only HTTP(S) to its clients and imports nothing of the controller side.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    # The simulator ships in the same distribution as the controller; /version reports it.
    __version__ = version("jobset")
except PackageNotFoundError:  # a source tree on sys.path without an install
    __version__ = "0.0.0"
