"""The types of `authentication.k8s.io`, one registry module each."""
