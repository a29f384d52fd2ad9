"""What the shell modules share: their limits, the exceptions that carry control flow (`exit`,
`break`, a script that never ends, syntax the shell does not model), `sleep` operands and the
log line of an opaque command.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

MAX_STEPS: Final = 50_000  # commands executed before a script counts as running forever


MAX_LOG: Final = 256 * 1024  # characters of log kept


MAX_DEPTH: Final = 16  # nesting of substitutions / nested shells


SHELLS: Final = frozenset({"sh", "bash", "ash", "dash", "zsh", "ksh", "busybox-sh"})


SILENT: Final = frozenset(
    {
        "cd", "mkdir", "touch", "rm", "cp", "mv", "ln", "chmod", "chown", "trap", "ulimit",
        "umask", "sync", "alias", "hash", "type", "which", "rmdir", "stty", "ldconfig",
    }
)  # fmt: skip


def opaque_line(container: Mapping[str, Any], argv: Sequence[str] | None) -> str:
    name = container.get("name") if isinstance(container, Mapping) else None
    image = container.get("image") if isinstance(container, Mapping) else None
    what = f"ran {shlex.join(argv)}" if argv else "ran its image's default entrypoint"
    return f"[jobset-sim] container {name or '?'} (image {image or '?'}) {what} (simulated)\n"


def parse_sleep(arg: str) -> float | None:
    """A GNU `sleep` operand in seconds, or None if invalid."""
    if arg in ("inf", "infinity", "Inf", "INF", "Infinity"):
        return math.inf
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", arg)
    if m is None:
        return None
    factor = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return float(m.group(1)) * factor


# ---------------------------------------------------------------------------------------------
# Shell: lexer


class Unsupported(Exception):
    """Syntax this shell does not model; the caller falls back to a heuristic reading."""


class Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


class Forever(Exception):
    """The process would never exit (sleep infinity, endless loop)."""


class LoopControl(Exception):
    def __init__(self, kind: str, levels: int) -> None:
        self.kind = kind
        self.levels = levels
