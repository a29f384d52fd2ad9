"""The types of `authorization.k8s.io`, one registry module each."""
