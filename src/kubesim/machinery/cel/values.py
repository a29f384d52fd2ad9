"""The pieces every CEL library shares: `CelError`, error values, type tests and namespace markers.

An extension function takes celpy values and returns a value, or a `CELEvalError` *value*
(`error_value`) that celpy propagates like a cel-go error; raising `TypeError` means "no such overload".
"""

from __future__ import annotations

from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from kubesim.machinery.field import go_float


class CelError(Exception):
    """A rule could not be evaluated; the message is worded like cel-go's.

    `overload` marks "no such overload" failures, which kube-apiserver reports with its own
    longer explanation; `cost_limit` an evaluation cancelled at the per-call cost limit.
    """

    def __init__(self, message: str, *, overload: bool = False, cost_limit: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.overload = overload
        self.cost_limit = cost_limit


# --------------------------------------------------------------------------------------------
# Values


def error_value(message: str) -> CELEvalError:
    """An error *value*: celpy propagates returned CELEvalError objects like cel-go errors."""
    return CELEvalError(message)


BOOL = (bool, celtypes.BoolType)


def is_bool(v: Any) -> bool:
    return isinstance(v, BOOL)


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, BOOL)


class Namespace:
    """The receiver of namespaced calls such as `sets.contains(a, b)` or `optional.none()`.

    celpy parses `sets.contains(a, b)` as a method call on a variable `sets`, so each namespace
    is bound as a variable holding one of these markers and the functions dispatch on it.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NAMESPACES = {
    name: Namespace(name) for name in ("optional", "sets", "strings", "math", "format", "base64")
}


MISSING: Any = object()


# --------------------------------------------------------------------------------------------
# Extension functions. Each takes celpy values; an error is returned as a CELEvalError value.


def check_str(*values: Any) -> None:
    for v in values:
        if not isinstance(v, str):
            raise TypeError("no such overload")


def check_int(*values: Any) -> None:
    for v in values:
        if not isinstance(v, int) or isinstance(v, BOOL):
            raise TypeError("no such overload")


def to_display(v: Any) -> str:
    """How `%s` prints a value in cel-go's `format`."""
    if isinstance(v, BOOL):
        return "true" if v else "false"
    if v is None or isinstance(v, celtypes.NullType):
        return "null"
    if isinstance(v, str):
        return str(v)
    if isinstance(v, float):
        return go_float(float(v))
    if isinstance(v, list):
        return "[" + ", ".join(to_display(x) for x in v) + "]"
    if isinstance(v, dict):
        items = sorted((to_display(k), to_display(x)) for k, x in v.items())
        return "{" + ", ".join(f"{k}: {x}" for k, x in items) + "}"
    if isinstance(v, celtypes.DurationType):
        return go_float(v.total_seconds()) + "s"
    if isinstance(v, celtypes.TimestampType):
        return v.strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(v)
