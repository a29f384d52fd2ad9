"""The types of `networking.k8s.io`, one registry module each."""
