"""The types of `apps`, one registry module each."""
