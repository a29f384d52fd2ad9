"""The types of `batch`, one registry module each."""
