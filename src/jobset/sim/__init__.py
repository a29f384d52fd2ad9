"""The simulated Kubernetes cluster: an API server plus simulated controllers, scheduler and kubelet.

It speaks only HTTP(S) to its clients and imports nothing of the controller side.
"""
