"""A smaller version of Kubernetes' quantity library: `quantity("500m")`, `isQuantity`, `sign`,
`add`, `sub`, `compareTo`, `isGreaterThan`, `asInteger`, ...
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from celpy import celtypes

from kubesim.machinery.cel.mathlib import math_unary
from kubesim.machinery.cel.values import BOOL, Namespace, check_str, error_value

# Quantities (k8s.io/apimachinery resource.Quantity) --------------------------------------------

_QUANTITY_RE = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


class Quantity:
    """A Kubernetes resource quantity such as `500m` or `1Gi`, compared by value."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Decimal) -> None:
        self.text = text
        self.value = value

    @classmethod
    def parse(cls, text: str) -> Quantity | None:
        m = _QUANTITY_RE.match(text)
        if not m:
            return None
        number, suffix = m.group(1), m.group(2) or ""
        try:
            if suffix[:1] in ("e", "E"):
                value = Decimal(number) * (Decimal(10) ** int(suffix[1:]))
            else:
                value = Decimal(number) * _SUFFIX[suffix]
        except (InvalidOperation, KeyError):
            return None
        return cls(text, value)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return self.text


def _quantity(s: Any) -> Any:
    check_str(s)
    q = Quantity.parse(s)
    return q if q is not None else error_value(f"quantities must match the regular expression: {s}")


def _is_quantity(s: Any) -> Any:
    check_str(s)
    return celtypes.BoolType(Quantity.parse(s) is not None)


def _as_quantity(v: Any) -> Quantity:
    if isinstance(v, Quantity):
        return v
    if isinstance(v, int) and not isinstance(v, BOOL):
        return Quantity(str(v), Decimal(int(v)))
    raise TypeError("no such overload")


def _q_is_integer(q: Any) -> Any:
    q = _as_quantity(q)
    return celtypes.BoolType(q.value == q.value.to_integral_value())


def _q_as_integer(q: Any) -> Any:
    q = _as_quantity(q)
    if q.value != q.value.to_integral_value() or not -(2**63) <= q.value < 2**63:
        return error_value("cannot convert value to integer")
    return celtypes.IntType(int(q.value))


def _q_as_float(q: Any) -> Any:
    return celtypes.DoubleType(float(_as_quantity(q).value))


def _sign(q: Any) -> Any:
    value = _as_quantity(q).value
    return celtypes.IntType((value > 0) - (value < 0))


def _sign_dispatch(target: Any, *args: Any) -> Any:
    if isinstance(target, Namespace):
        return math_unary("sign")(target, *args)
    return _sign(target)


def _q_add(q: Any, other: Any) -> Any:
    a, b = _as_quantity(q), _as_quantity(other)
    return Quantity(str(a.value + b.value), a.value + b.value)


def _q_sub(q: Any, other: Any) -> Any:
    a, b = _as_quantity(q), _as_quantity(other)
    return Quantity(str(a.value - b.value), a.value - b.value)


def _compare_to(q: Any, other: Any) -> Any:
    a, b = _as_quantity(q).value, _as_quantity(other).value
    return celtypes.IntType((a > b) - (a < b))


def _is_greater(q: Any, other: Any) -> Any:
    return celtypes.BoolType(_as_quantity(q).value > _as_quantity(other).value)


def _is_less(q: Any, other: Any) -> Any:
    return celtypes.BoolType(_as_quantity(q).value < _as_quantity(other).value)


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "isInteger": _q_is_integer,
    "asInteger": _q_as_integer,
    "asApproximateFloat": _q_as_float,
    "sign": _sign_dispatch,
    "add": _q_add,
    "sub": _q_sub,
    "compareTo": _compare_to,
    "isGreaterThan": _is_greater,
    "isLessThan": _is_less,
}
