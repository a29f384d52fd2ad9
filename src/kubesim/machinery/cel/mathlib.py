"""cel-go's math extensions: `math.greatest/least/abs/ceil/floor/round/trunc/sign/isNaN/isInf/isFinite`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from celpy import celtypes

from kubesim.machinery.cel.values import Namespace, error_value, is_number


def math_extreme(ns: Any, pick_max: bool, args: tuple[Any, ...]) -> Any:
    if ns.name != "math" or not args:
        raise TypeError("no such overload")
    values = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
    if not values:
        return error_value(
            f"math.{'greatest' if pick_max else 'least'}() requires at least one argument"
        )
    for v in values:
        if not is_number(v):
            raise TypeError("no such overload")
    return max(values, key=float) if pick_max else min(values, key=float)


def _greatest(ns: Any, *args: Any) -> Any:
    return math_extreme(ns, True, args)


def _least(ns: Any, *args: Any) -> Any:
    return math_extreme(ns, False, args)


def math_unary(name: str) -> Callable[..., Any]:
    def apply(ns: Any, x: Any) -> Any:
        if not (isinstance(ns, Namespace) and ns.name == "math") or not is_number(x):
            raise TypeError("no such overload")
        if name in ("isNaN", "isInf", "isFinite"):
            f = float(x)
            result = {"isNaN": f != f, "isInf": f in (math.inf, -math.inf)}.get(
                name, f == f and f not in (math.inf, -math.inf)
            )
            return celtypes.BoolType(result)
        if name == "abs":
            if isinstance(x, celtypes.IntType) and x == -(2**63):
                return error_value("integer overflow")
            return type(x)(abs(x))
        if name == "sign":
            return type(x)((x > 0) - (x < 0))
        f = float(x)
        if not isinstance(x, float):
            raise TypeError("no such overload")
        if name == "ceil":
            return celtypes.DoubleType(math.ceil(f) if math.isfinite(f) else f)
        if name == "floor":
            return celtypes.DoubleType(math.floor(f) if math.isfinite(f) else f)
        if name == "trunc":
            return celtypes.DoubleType(math.trunc(f) if math.isfinite(f) else f)
        # round: half away from zero, like Go's math.Round
        if not math.isfinite(f):
            return celtypes.DoubleType(f)
        return celtypes.DoubleType(math.copysign(math.floor(abs(f) + 0.5), f))

    return apply


FUNCTIONS: dict[str, Any] = {
    "greatest": _greatest,
    "least": _least,
    **{
        name: math_unary(name)
        for name in ("abs", "ceil", "floor", "round", "trunc", "isNaN", "isInf", "isFinite")
    },
}
