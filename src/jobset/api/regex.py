"""Go-compatible regular expressions for the patterns tenants write into JobSets.

Upstream evaluates `onJobFailureMessagePatterns` with Go's `regexp` (RE2). This project
uses RE2 too (google-re2), for two reasons: the same pattern must accept and match the same
way as upstream, and matching must be linear in the input - these patterns run on the
controller's one event loop, where a backtracking engine (Python's `re`) given `(a+)+$`
would stall every namespace. RE2 accepts the syntax of Go's `regexp.Compile` except `\\C`
(any byte), which Go refuses and so is refused here too.
"""

from __future__ import annotations

import functools
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

__all__ = ["COMPILED_CACHE_SIZE", "compile_go_regexp", "go_regexp_error"]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print parse errors to stderr; callers report them


def go_regexp_error(pattern: str) -> str | None:
    """Why Go's `regexp.Compile` refuses `pattern` (None: it compiles)."""
    if _has_any_byte_escape(pattern):
        return "invalid escape sequence: `\\C`"
    try:
        re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        return detail.decode() if isinstance(detail, bytes) else str(detail)
    return None


# Compiled patterns kept: more than one JobSet's worth (3,000 rules x 2 patterns fit in one
# object). Held below the working set, an LRU cache thrashes - a pass that walks 6,000
# patterns in order would compile every one again, ~70 us each. A compiled pattern takes
# about 1.6 KiB, so the cache stays under ~30 MiB.
COMPILED_CACHE_SIZE = 16384


@functools.lru_cache(maxsize=COMPILED_CACHE_SIZE)
def compile_go_regexp(pattern: str) -> Any | None:
    """The compiled pattern, or None when Go would refuse it (cached: rules repeat).
    Compiles once: `go_regexp_error` is for saying why, at admission."""
    if _has_any_byte_escape(pattern):
        return None
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error:
        return None


def _has_any_byte_escape(pattern: str) -> bool:
    """`\\C` anywhere, skipping escaped pairs (`\\\\C` is a backslash then `C`)."""
    i = 0
    while i < len(pattern) - 1:
        if pattern[i] == "\\":
            if pattern[i + 1] == "C":
                return True
            i += 2
            continue
        i += 1
    return False
