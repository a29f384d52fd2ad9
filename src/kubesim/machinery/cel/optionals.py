"""Optionals: `optional.none()`, `optional.of()`, `optional.ofNonZeroValue()`, `hasValue()`,
`value()`, `orValue()` (needed for `optionalOldSelf`).
"""

from __future__ import annotations

from typing import Any

from celpy import celtypes

from kubesim.machinery.cel.standard import Optional
from kubesim.machinery.cel.values import Namespace, error_value

# Optionals ------------------------------------------------------------------------------------


def _optional_ns(ns: Any) -> None:
    if not (isinstance(ns, Namespace) and ns.name == "optional"):
        raise TypeError("no such overload")


def _opt_none(ns: Any) -> Any:
    _optional_ns(ns)
    return Optional.none()


def _opt_of(ns: Any, value: Any) -> Any:
    _optional_ns(ns)
    return Optional.of(value)


def _opt_of_non_zero(ns: Any, value: Any) -> Any:
    _optional_ns(ns)
    zero = value is None or (not isinstance(value, Optional) and not value)
    return Optional.none() if zero else Optional.of(value)


def _has_value(opt: Any) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("no such overload")
    return celtypes.BoolType(opt.has_value)


def _value(opt: Any) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("no such overload")
    if not opt.has_value:
        return error_value("optional.none() dereference")
    return opt.value


def _or_value(opt: Any, default: Any) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("no such overload")
    return opt.value if opt.has_value else default


FUNCTIONS: dict[str, Any] = {
    "none": _opt_none,
    "of": _opt_of,
    "ofNonZeroValue": _opt_of_non_zero,
    "hasValue": _has_value,
    "value": _value,
    "orValue": _or_value,
}
