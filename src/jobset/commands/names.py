"""The user commands' names, for `jobset.cli` to recognise one before loading anything."""

from __future__ import annotations

from typing import Final

__all__ = ["QUICK_COMMANDS", "USER_COMMANDS"]

USER_COMMANDS: Final = frozenset({"get", "describe", "watch", "tree", "submit", "delete", "logs"})
# The read-only ones that connect quickly (`jobset.sdk.quickclient`) and answer at once.
QUICK_COMMANDS: Final = frozenset({"get", "describe", "tree"})
