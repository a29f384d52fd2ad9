"""The types of `coordination.k8s.io`, one registry module each."""
