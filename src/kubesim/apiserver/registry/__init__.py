"""The served types: one module per built-in type under `<group>/<kind>.py`, listed in
`catalogue.py` (see `kubesim.apiserver` and docs/sim.md, *Adding a resource type*)."""
