"""The types of `events.k8s.io`, one registry module each."""
