"""The kubelets of the simulated cluster, and the runtime of real containers.

- `kubelet.py`: every node's kubelet in one component: pods bound to a node start, run and
  finish as `kubesim.programs` says, with the status a real kubelet reports; NotReady nodes
  fail their pods. What it knows of a pod and the status it reports from that is
  `podstate.py`; the NoExecute taints and tolerations it evicts by, `taints.py`; what it does
  when a container exits (restart rules, RestartAllContainers), `restartrules.py`; the
  emptyDir files of simulated containers, `simfiles.py`.
  It talks to runtimes through `cri.py`: `simruntime.py` for simulated programs, and for
  containers whose image is mapped with `--run-image`, which run for real:
- `processes.py`: the runtime for those, behind the kubelet's CRI-shaped calls: each pod in
  its own network namespace (`network.py`), each container an OCI bundle (`ocispec.py`,
  `hostroot.py`, `subpaths.py`) that runc runs (`runc.py`), with the environment
  (`envvars.py`), volumes (`volumes.py`) and probes (`probes.py`) a kubelet gives a
  container, their logs (`containerlogs.py`) and exec, attach, port-forward (`podexec.py`).
"""

from kubesim.kubelet.kubelet import Kubelet

__all__ = ["Kubelet"]
