"""jobset-py: a JobSet controller for Kubernetes, and the simulated cluster it is tested on."""

__version__ = "0.1.0"
