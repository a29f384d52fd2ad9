"""The types of `scheduling.k8s.io`, one registry module each."""
