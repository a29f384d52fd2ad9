"""The types of `policy`, one registry module each."""
