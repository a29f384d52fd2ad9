"""The Kubernetes list library (`isSorted`, `sum`, `min`, `max`), cel-go's list extensions (`slice`,
`flatten`, `distinct`, `sort`), `contains` and the sets library (`sets.contains/equivalent/intersects`).
"""

from __future__ import annotations

import itertools
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from kubesim.machinery.cel.mathlib import math_extreme
from kubesim.machinery.cel.standard import eq, greater, less, less_equal
from kubesim.machinery.cel.values import Namespace, check_int, check_str, error_value


def _is_sorted(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    for x, y in itertools.pairwise(items):
        res = less_equal(x, y)
        if isinstance(res, CELEvalError):
            return res
        if not res:
            return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _sum(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    if not items:
        return celtypes.IntType(0)
    total = items[0]
    for v in items[1:]:
        total = total + v
    return total


def _extreme(items: Any, pick_max: bool) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    if not items:
        return error_value(f"{'max' if pick_max else 'min'} called on empty list")
    best = items[0]
    better = greater if pick_max else less
    for v in items[1:]:
        if better(v, best):
            best = v
    return best


def _max(target: Any, *rest: Any) -> Any:
    if isinstance(target, Namespace):
        return math_extreme(target, True, rest)
    return _extreme(target, True)


def _min(target: Any, *rest: Any) -> Any:
    if isinstance(target, Namespace):
        return math_extreme(target, False, rest)
    return _extreme(target, False)


def _slice(items: Any, start: Any, end: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    check_int(start, end)
    if start < 0 or end < 0 or start > end or end > len(items):
        return error_value(f"cannot slice({start}, {end}) a list of size {len(items)}")
    return celtypes.ListType(items[start:end])


def _flatten(items: Any, depth: Any = 1) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    check_int(depth)
    if depth < 0:
        return error_value("level must be non-negative")
    out: list[Any] = []

    def walk(xs: list[Any], level: int) -> None:
        for x in xs:
            if isinstance(x, list) and level > 0:
                walk(x, level - 1)
            else:
                out.append(x)

    walk(items, int(depth))
    return celtypes.ListType(out)


def _distinct(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    out: list[Any] = []
    for x in items:
        if not any(eq(x, y) for y in out):
            out.append(x)
    return celtypes.ListType(out)


def _sort(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    return celtypes.ListType(sorted(items))


def _contains(target: Any, *args: Any) -> Any:
    if isinstance(target, Namespace):
        if target.name != "sets" or len(args) != 2:
            raise TypeError("no such overload")
        a, b = args
        return celtypes.BoolType(all(any(eq(x, y) for y in a) for x in b))
    (item,) = args
    if isinstance(target, str):
        check_str(item)
        return celtypes.BoolType(item in target)
    if isinstance(target, list):
        return celtypes.BoolType(any(eq(x, item) for x in target))
    if isinstance(target, dict):
        return celtypes.BoolType(item in target)
    raise TypeError("no such overload")


def _sets_only(ns: Any) -> None:
    if not (isinstance(ns, Namespace) and ns.name == "sets"):
        raise TypeError("no such overload")


def _sets_equivalent(ns: Any, a: Any, b: Any) -> Any:
    _sets_only(ns)
    return celtypes.BoolType(
        all(any(eq(x, y) for y in b) for x in a) and all(any(eq(x, y) for y in a) for x in b)
    )


def _sets_intersects(ns: Any, a: Any, b: Any) -> Any:
    _sets_only(ns)
    return celtypes.BoolType(any(any(eq(x, y) for y in b) for x in a))


FUNCTIONS: dict[str, Any] = {
    "contains": _contains,
    "isSorted": _is_sorted,
    "sum": _sum,
    "max": _max,
    "min": _min,
    "slice": _slice,
    "flatten": _flatten,
    "distinct": _distinct,
    "sort": _sort,
    "equivalent": _sets_equivalent,
    "intersects": _sets_intersects,
}
