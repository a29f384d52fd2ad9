"""The types of `rbac.authorization.k8s.io`, one registry module each."""
