"""The types of `discovery.k8s.io`, one registry module each."""
