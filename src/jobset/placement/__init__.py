"""Exclusive topology placement: one child Job per topology domain (node pool, rack, slice).

`labels` copies the placement annotations onto child Jobs and applies the node-selector
strategy; the pod webhooks and the pod controller implement the affinity strategy.
"""
