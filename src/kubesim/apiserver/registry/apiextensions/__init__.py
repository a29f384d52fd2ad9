"""The types of `apiextensions.k8s.io`, one registry module each."""
