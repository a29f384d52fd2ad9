"""Where cel-go's standard semantics differ from celpy's: equality, ordering, `+`, `in`, `&&`, `||`, `[]`
and the conversions (`string()`, `int()`, ...), and the list types and optional they apply to.

* Equality is heterogeneous (`1 == 1.0` is true, `1 == "1"` is false instead of an error), and
  int, uint and double compare with each other (cel-go's cross-type numeric comparisons).
* Lists with `x-kubernetes-list-type: set` or `map` compare equal regardless of order, and `+`
  on them is a union (`SetList`, `MapList`).
* `Optional` is CEL's `optional_type`, what `oldSelf` is bound to with `optionalOldSelf`.
"""

from __future__ import annotations

import datetime
import math
import operator
import re
from collections.abc import Callable, Iterable
from typing import Any, cast

from celpy import celtypes
from celpy.evaluation import CELEvalError

from kubesim.machinery.cel.network import CIDR, IP, URL
from kubesim.machinery.cel.quantity import Quantity
from kubesim.machinery.cel.values import (
    BOOL,
    MISSING,
    check_int,
    check_str,
    error_value,
    is_bool,
    is_number,
    to_display,
)
from kubesim.machinery.field import go_float


class SetList(celtypes.ListType):
    """A list with `x-kubernetes-list-type: set`: order does not matter for `==`, `+` is a union."""

    def __eq__(self, other: Any) -> bool:
        return bool(equals(self, other))

    def __ne__(self, other: Any) -> bool:
        return not equals(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> SetList:  # type: ignore[override]
        out = SetList(self)
        for item in other:
            if not any(equals(item, mine) for mine in out):
                out.append(item)
        return out


class MapList(celtypes.ListType):
    """A list with `x-kubernetes-list-type: map`: elements are identified by their key fields.

    `==` ignores order; `a + b` keeps `a`'s order and lets `b`'s elements replace those of `a`
    with the same key, appending the rest (the semantics Kubernetes gives to map lists).
    """

    keys: tuple[str, ...] = ()

    def __init__(self, items: Iterable[Any] = (), keys: tuple[str, ...] = ()) -> None:
        super().__init__(items)
        self.keys = keys

    def key_of(self, item: Any) -> tuple[Any, ...]:
        if not isinstance(item, dict):
            return (id(item),)
        return tuple(item.get(k) for k in self.keys)

    def __eq__(self, other: Any) -> bool:
        return bool(equals(self, other))

    def __ne__(self, other: Any) -> bool:
        return not equals(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> MapList:  # type: ignore[override]
        out = MapList(self, self.keys)
        index = {out.key_of(item): i for i, item in enumerate(out)}
        for item in other:
            key = out.key_of(item)
            if key in index:
                out[index[key]] = item
            else:
                index[key] = len(out)
                out.append(item)
        return out


class Optional:
    """CEL `optional_type`: what `oldSelf` is bound to for rules with `optionalOldSelf: true`."""

    __slots__ = ("_has", "_value")

    def __init__(self, value: Any = None, has: bool = False) -> None:
        self._value = value
        self._has = has

    @classmethod
    def none(cls) -> Optional:
        return cls()

    @classmethod
    def of(cls, value: Any) -> Optional:
        return cls(value, True)

    @property
    def has_value(self) -> bool:
        return self._has

    @property
    def value(self) -> Any:
        return self._value

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Optional):
            return False
        if not self._has or not other._has:
            return self._has == other._has
        return bool(equals(self._value, other._value))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"optional.of({self._value!r})" if self._has else "optional.none()"


def equals(a: Any, b: Any) -> Any:
    """Heterogeneous CEL equality (cel-go semantics): values of different types are unequal.

    Returns a BoolType, or the first argument that is an error value.
    """
    if isinstance(a, CELEvalError):
        return a
    if isinstance(b, CELEvalError):
        return b
    return celtypes.BoolType(eq(a, b))


def eq(a: Any, b: Any) -> bool:
    if callable(a) or callable(b):  # type values: `type(x) == string`
        return _TYPE_ALIASES.get(a, a) is _TYPE_ALIASES.get(b, b)
    if isinstance(a, BOOL) or isinstance(b, BOOL):
        return isinstance(a, BOOL) and isinstance(b, BOOL) and bool(a) == bool(b)
    if is_number(a) and is_number(b):
        return float(a) == float(b) if isinstance(a, float) or isinstance(b, float) else a == b
    if isinstance(a, str) and isinstance(b, str):
        return str.__eq__(a, b)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if isinstance(a, MapList) or isinstance(b, MapList):
            ml = a if isinstance(a, MapList) else cast(MapList, b)
            other = {ml.key_of(x): x for x in b}
            if len(other) != len(b):
                return all(eq(x, y) for x, y in zip(a, b, strict=True))
            for x in a:
                y = other.get(ml.key_of(x), MISSING)
                if y is MISSING or not eq(x, y):
                    return False
            return True
        if isinstance(a, SetList) or isinstance(b, SetList):
            return all(any(eq(x, y) for y in b) for x in a) and all(
                any(eq(y, x) for x in a) for y in b
            )
        return all(eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not eq(v, b[k]):
                return False
        return True
    a_null = a is None or isinstance(a, celtypes.NullType)
    b_null = b is None or isinstance(b, celtypes.NullType)
    if a_null or b_null:
        return a_null and b_null
    if isinstance(a, Optional) or isinstance(b, Optional):
        return bool(a == b)
    if type(a) is not type(b) and not (isinstance(a, type(b)) or isinstance(b, type(a))):
        return False
    try:
        return bool(a == b)
    except TypeError:
        return False


def _not_equals(a: Any, b: Any) -> Any:
    result = equals(a, b)
    return result if isinstance(result, CELEvalError) else celtypes.BoolType(not result)


def _plain(v: Any) -> Any:
    """A CEL number as a plain Python number, so that mixed int/double comparisons are exact."""
    return int(v) if isinstance(v, int) else float(v)


def _ordered(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    """A relational operator: same-type operands, plus cel-go's cross-type numeric comparisons."""

    def compare(a: Any, b: Any) -> Any:
        if isinstance(a, CELEvalError):
            return a
        if isinstance(b, CELEvalError):
            return b
        if is_number(a) and is_number(b):
            return celtypes.BoolType(op(_plain(a), _plain(b)))
        if is_bool(a) and is_bool(b):
            return celtypes.BoolType(op(bool(a), bool(b)))
        if isinstance(a, str) and isinstance(b, str):
            return celtypes.BoolType(op(str(a), str(b)))
        if isinstance(a, bytes) and isinstance(b, bytes):
            return celtypes.BoolType(op(bytes(a), bytes(b)))
        for kind in (celtypes.TimestampType, celtypes.DurationType):
            if isinstance(a, kind) and isinstance(b, kind):
                return celtypes.BoolType(op(a, b))
        raise TypeError("no such overload")

    return compare


less = _ordered(operator.lt)


less_equal = _ordered(operator.le)


greater = _ordered(operator.gt)


_greater_equal = _ordered(operator.ge)


def _add(a: Any, b: Any) -> Any:
    """`+`, keeping CEL types: Python's str and list concatenation return plain str / list."""
    result = operator.add(a, b)
    if type(result) is str:
        return celtypes.StringType(result)
    if type(result) is list:
        return celtypes.ListType(result)
    return result


def _divide(a: Any, b: Any) -> Any:
    """`/`: doubles divide as IEEE 754 does in cel-go (x/0.0 is +Inf, -Inf or NaN by the
    sign of x; celpy answers +Inf for all three); integers keep celpy's division."""
    if isinstance(a, celtypes.DoubleType) and isinstance(b, celtypes.DoubleType) and b == 0.0:
        if a == 0.0 or math.isnan(a):
            return celtypes.DoubleType(math.nan)
        return celtypes.DoubleType(math.copysign(math.inf, a) * math.copysign(1.0, b))
    return operator.truediv(a, b)


def _in(item: Any, container: Any) -> Any:
    """`x in list` / `k in map` with heterogeneous equality."""
    if isinstance(item, CELEvalError):
        return item
    if isinstance(container, CELEvalError):
        return container
    if isinstance(container, list):
        return celtypes.BoolType(any(eq(x, item) for x in container))
    if isinstance(container, dict):
        try:
            return celtypes.BoolType(item in container)
        except TypeError:
            return celtypes.BoolType(False)
    raise TypeError("no such overload")


# Conversions that celpy gets wrong for cel-go ---------------------------------------------------


def _string(v: Any) -> Any:
    if isinstance(v, BOOL):
        return celtypes.StringType("true" if v else "false")
    if isinstance(v, bytes):
        try:
            return celtypes.StringType(v.decode("utf-8"))
        except UnicodeDecodeError:
            return error_value("invalid UTF-8 in bytes, cannot convert to string")
    if isinstance(v, float):
        return celtypes.StringType(go_float(float(v)))
    if isinstance(v, Quantity | URL | IP | CIDR):
        return celtypes.StringType(v.text if isinstance(v, Quantity | URL) else str(v))
    if isinstance(v, celtypes.TimestampType):
        return celtypes.StringType(to_display(v))
    if isinstance(v, list | dict):
        raise TypeError("no such overload")
    return celtypes.StringType(v)


def _bool(v: Any) -> Any:
    if isinstance(v, BOOL):
        return celtypes.BoolType(v)
    if isinstance(v, str):
        if v in ("1", "t", "T", "true", "TRUE", "True"):
            return celtypes.BoolType(True)
        if v in ("0", "f", "F", "false", "FALSE", "False"):
            return celtypes.BoolType(False)
        return error_value(f"type conversion error from 'string' to 'bool': {v!r}")
    raise TypeError("no such overload")


def _int(v: Any) -> Any:
    if isinstance(v, BOOL):
        raise TypeError("no such overload")
    if isinstance(v, str):
        try:
            value = int(v, 10)
        except ValueError:
            return error_value(f"type conversion error from 'string' to 'int': {v!r}")
    elif isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return error_value("integer overflow")
        value = int(v)
    elif isinstance(v, celtypes.TimestampType):
        value = int(v.timestamp())
    elif isinstance(v, int):
        value = int(v)
    else:
        raise TypeError("no such overload")
    if not -(2**63) <= value < 2**63:
        return error_value("integer overflow")
    return celtypes.IntType(value)


def _duration(v: Any) -> Any:
    if isinstance(v, celtypes.DurationType):
        return v
    check_str(v)
    try:
        return celtypes.DurationType(str(v))
    except (ValueError, TypeError, OverflowError):
        return error_value("type conversion error from 'string' to 'google.protobuf.Duration'")


def _timestamp(v: Any) -> Any:
    if isinstance(v, celtypes.TimestampType):
        return v
    if isinstance(v, int) and not isinstance(v, BOOL):
        return celtypes.TimestampType(datetime.datetime.fromtimestamp(int(v), datetime.UTC))
    check_str(v)
    if not _RFC3339.match(v):
        return error_value("type conversion error from 'string' to 'google.protobuf.Timestamp'")
    try:
        return celtypes.TimestampType(str(v))
    except (ValueError, TypeError, OverflowError):
        return error_value("type conversion error from 'string' to 'google.protobuf.Timestamp'")


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _bytes(v: Any) -> Any:
    if isinstance(v, bytes):
        return celtypes.BytesType(v)
    check_str(v)
    return celtypes.BytesType(str(v).encode())


def logical_or(x: Any, y: Any) -> Any:
    """`||` with cel-go's error absorption: `true || error` is true, `error || error` the first."""
    if is_bool(x) and x:
        return x
    if is_bool(y) and y:
        return y
    if isinstance(x, CELEvalError):
        return x
    if isinstance(y, CELEvalError):
        return y
    if is_bool(x) and is_bool(y):
        return celtypes.BoolType(False)
    return error_value("no such overload")


def logical_and(x: Any, y: Any) -> Any:
    """`&&` with error absorption: `false && error` is false, `error && error` the first."""
    if is_bool(x) and not x:
        return x
    if is_bool(y) and not y:
        return y
    if isinstance(x, CELEvalError):
        return x
    if isinstance(y, CELEvalError):
        return y
    if is_bool(x) and is_bool(y):
        return celtypes.BoolType(True)
    return error_value("no such overload")


def _index(container: Any, index: Any) -> Any:
    """`a[i]` with cel-go's error texts."""
    if isinstance(container, CELEvalError):
        return container
    if isinstance(index, CELEvalError):
        return index
    if isinstance(container, list):
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        check_int(index)
        if not 0 <= index < len(container):
            return error_value(f"index out of bounds: {index}")
        return container[index]
    if isinstance(container, dict):
        try:
            return container[index]
        except KeyError:
            return error_value(f"no such key: {index}")
    raise TypeError("no such overload")


# `string`, `int`, ... name both a conversion function and a type; `type(x)` returns the type.
_TYPE_ALIASES: dict[Any, Any] = {
    _string: celtypes.StringType,
    _bool: celtypes.BoolType,
    _int: celtypes.IntType,
    _bytes: celtypes.BytesType,
}


FUNCTIONS: dict[str, Any] = {
    "_==_": equals,
    "_||_": logical_or,
    "_&&_": logical_and,
    "_[_]": _index,
    "_!=_": _not_equals,
    "_<_": less,
    "_<=_": less_equal,
    "_>_": greater,
    "_>=_": _greater_equal,
    "_in_": _in,
    "_+_": _add,
    "_/_": _divide,
    "string": _string,
    "bool": _bool,
    "int": _int,
    "bytes": _bytes,
    "duration": _duration,
    "timestamp": _timestamp,
}
