"""The types of `apiregistration.k8s.io`, one registry module each."""
