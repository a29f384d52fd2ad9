"""The types of `storage.k8s.io`, one registry module each."""
