"""The types of `admissionregistration.k8s.io`, one registry module each."""
