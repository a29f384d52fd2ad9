"""The kubelets of the simulated cluster.

- `kubelet.py`: every node's kubelet in one component. Containers run simulated programs
  (`kubesim.programs`), except those whose image is mapped with `--run-image`.
- `processes.py`: the runtime for those: real host processes, each pod in its own network
  namespace (`network.py`) and each container in a private mount namespace set up by
  `launch.py`, with the environment (`envvars.py`), volumes (`volumes.py`) and probes
  (`probes.py`) a kubelet gives a container.
"""

from kubesim.kubelet.kubelet import Kubelet

__all__ = ["Kubelet"]
