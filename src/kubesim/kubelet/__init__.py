"""The simulated kubelets of every node, and the node-lifecycle duties around them.

- `kubelet.py` - pods bound to a node start, run and finish as `kubesim.programs` says,
  with the status a real kubelet reports; NotReady nodes fail their pods.
"""
