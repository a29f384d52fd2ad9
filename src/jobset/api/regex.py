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

__all__ = [
    "COMPILED_CACHE_SIZE",
    "MANY_PATTERNS",
    "compile_go_regexp",
    "go_regexp_error",
    "message_pattern_count",
]

# A failure policy with this many message patterns is compiled and matched in a worker
# thread, by the controller's plan and by the webhook's check alike: compiling and matching a
# policy as large as an object allows would hold the event loop too long.
MANY_PATTERNS = 256


def message_pattern_count(js: Any) -> int:
    """How many `onJobFailureMessagePatterns` the JobSet's failure policy holds."""
    spec = js.get("spec") if isinstance(js, dict) else None
    policy = spec.get("failurePolicy") if isinstance(spec, dict) else None
    rules = policy.get("rules") if isinstance(policy, dict) else None
    if not isinstance(rules, list):
        return 0
    count = 0
    for rule in rules:
        patterns = rule.get("onJobFailureMessagePatterns") if isinstance(rule, dict) else None
        count += len(patterns) if isinstance(patterns, list) else 0
    return count


_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print parse errors to stderr; callers report them


def go_regexp_error(pattern: str) -> str | None:
    """Why Go's `regexp.Compile` refuses `pattern` (None: it compiles).

    A pattern that compiles is answered from `compile_go_regexp`'s cache (and put there), so
    the webhook's check compiles what the controller's plan then uses, once.
    """
    if compile_go_regexp(pattern) is not None:
        return None
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
# patterns in order would compile every one again. Compiled patterns are small, so a cache of
# this size stays modest in memory.
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
