"""The types of the core group (`v1`), one registry module each."""
