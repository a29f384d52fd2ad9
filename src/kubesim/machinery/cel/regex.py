"""Kubernetes' regex library (`find`, `findAll`) and `re2_compile`, on RE2 as in cel-go.

google-re2 is also what celpy uses for `matches`.
"""

from __future__ import annotations

import importlib
from typing import Any

from celpy import celtypes

from kubesim.machinery.cel.values import check_int, check_str, error_value

# google-re2 is what celpy itself uses for `matches`; RE2 is the regex dialect of cel-go.
_re2: Any = importlib.import_module("re2")


_RE2_OPTIONS: Any = _re2.Options()


_RE2_OPTIONS.log_errors = False  # RE2 would print parse errors to stderr; callers report them


def re2_compile(pattern: str) -> Any:
    """Compile with RE2 (the regex dialect of Go and cel-go); ValueError if it is invalid."""
    try:
        return _re2.compile(pattern, _RE2_OPTIONS)
    except _re2.error as ex:
        raise ValueError(str(ex)) from None


def _find(s: Any, pattern: Any) -> Any:
    check_str(s, pattern)
    try:
        m = _re2.search(pattern, s)
    except _re2.error as ex:
        return error_value(f"error parsing regexp: {ex}")
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, limit: Any = -1) -> Any:
    check_str(s, pattern)
    check_int(limit)
    if limit == 0:
        return celtypes.ListType()
    try:
        compiled = _re2.compile(pattern)
    except _re2.error as ex:
        return error_value(f"error parsing regexp: {ex}")
    out: list[Any] = []
    for m in compiled.finditer(s):
        out.append(celtypes.StringType(m.group(0)))
        if 0 < limit <= len(out):
            break
    return celtypes.ListType(out)


FUNCTIONS: dict[str, Any] = {
    "find": _find,
    "findAll": _find_all,
}
